/*
 * decod - the supervisor.  It reads the config, makes the runtime and state
 * folders, starts each configured stage (fork, then exec at once), restarts
 * one that dies with growing delays, stops them in reverse pipeline order
 * on SIGTERM, re-reads its config on SIGHUP (restarting only the stages
 * whose settings changed), answers the control socket and speaks sd_notify.
 * It does no pipeline work itself.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "common/conf.h"
#include "common/json.h"
#include "common/journal.h"
#include "common/log.h"
#include "common/util.h"
#include "daemons/decod/decod.h"
#include "daemons/decod/decod_lease.h"

static int sig_pipe[2] = { -1, -1 };
static volatile sig_atomic_t got_term, got_hup, got_chld;

static void
on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	if (sig == SIGCHLD)
		got_chld = 1;
	else if (sig == SIGHUP)
		got_hup = 1;
	else
		got_term = 1;
	if (write(sig_pipe[1], &c, 1) < 0) {
		/* full: the loop wakes anyway */
	}
	errno = saved;
}

static void
usage(void)
{
	printf("usage: decod [-c FILE] [--check-config] [--SETTING VALUE ...]\n"
	    "The decod supervisor: starts, watches and restarts the stage daemons\n"
	    "named by `stages`.  Control it with decoctl (stages, restart, stop, start).\n\n"
	    "  -c, --config FILE   config file (default " DECOD_SYSCONFDIR "/decod/decod.conf,\n"
	    "                      or $DECOD_CONFIG)\n"
	    "  --check-config      validate the config, print every bad line, and exit\n\n");
	conf_print_help(stdout);
}

/* set_children - make the child table match `stages`; new ones start DOWN */
static void
set_children(struct sup *s)
{
	char *list = xstrdup(conf_get(s->cf, "stages")), *save = NULL;

	for (size_t i = 0; i < s->nchildren; i++)
		s->children[i].removed = 1;
	for (char *n = strtok_r(list, " ,", &save); n; n = strtok_r(NULL, " ,", &save)) {
		struct child *c = NULL;

		for (size_t i = 0; i < s->nchildren; i++)
			if (strcmp(s->children[i].name, n) == 0)
				c = &s->children[i];
		if (c == NULL) {
			s->children = xrealloc(s->children,
			    (s->nchildren + 1) * sizeof(*s->children));
			c = &s->children[s->nchildren++];
			memset(c, 0, sizeof(*c));
			snprintf(c->name, sizeof(c->name), "%s", n);
			c->status_fd = -1;
			c->state = CHILD_DOWN;
		}
		c->removed = 0;
	}
	free(list);
}

static void
reap(struct sup *s)
{
	pid_t pid;
	int status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		child_reaped(s, pid, status);
}

/* reload - re-read config; restart only the stages whose settings changed */
static void
reload(struct sup *s)
{
	int argc = s->argc;
	char **argv = xcalloc((size_t)argc + 1, sizeof(char *));
	struct conf *cf;

	sd_notify_send("RELOADING=1");
	memcpy(argv, s->argv, (size_t)argc * sizeof(char *));
	cf = conf_from_args(&argc, argv);
	free(argv);
	if (cf != NULL)
		conf_set_reader(cf, "decod");
	if (cf != NULL)
		json_set_max_depth((int)conf_get_int(cf, "json_max_depth"));
	if (cf != NULL && decod_check(cf, stderr) > 0) {
		conf_free(cf);
		cf = NULL;
	}
	if (cf == NULL) {
		log_kv(LOG_ERROR, "reload: the config has errors; keeping the running one", NULL);
		sd_notify_send("READY=1");
		return;
	}
	conf_free(s->cf);
	s->cf = cf;
	log_init("decod", log_parse_level(conf_get(cf, "log_level")),
	    log_parse_format(conf_get(cf, "log_format")));
	set_children(s);
	for (size_t i = 0; i < s->nchildren; i++) {
		struct child *c = &s->children[i];
		char *d = child_digest(cf, c->name, 0);
		char *l = child_digest(cf, c->name, 1);

		if (c->removed) {
			child_stop(s, c, conf_get_ms(cf, "stop_timeout"));
		} else if (c->digest != NULL && strcmp(d, c->digest) != 0 && c->pid > 0) {
			log_kv(LOG_INFO, "settings changed; restarting stage", "stage", c->name, NULL);
			child_event(s, c, CHILD_EV_RESTART);
		} else if (c->live_digest != NULL && strcmp(l, c->live_digest) != 0 &&
		    c->pid > 0) {
			log_kv(LOG_INFO, "settings changed; telling stage to reload", "stage",
			    c->name, NULL);
			child_event(s, c, CHILD_EV_HUP);
		} else if (c->state == CHILD_DOWN && !c->admin_down) {
			child_event(s, c, CHILD_EV_START);
		}
		free(c->digest);
		c->digest = d;
		free(c->live_digest);
		c->live_digest = l;
	}
	log_kv(LOG_INFO, "configuration reloaded", NULL);
	sd_notify_send("READY=1");
}

/*
 * shutdown_all - ask every stage to stop at once (SIGTERM), each with its
 * own stop_timeout to drain, and wait until all are gone; a stage still
 * there past its own time gets SIGKILL.  The journal is the truth, so no
 * stage depends on another still running while it drains: one that takes
 * its whole time (a notifier waiting on a replica that never answers)
 * costs the others nothing.
 */
static void
shutdown_all(struct sup *s)
{
	int64_t grace = conf_get_ms(s->cf, "stop_timeout");
	s->stopping = 1;
	sd_notify_send("STOPPING=1");
	log_kv(LOG_INFO, "stopping stages", NULL);
	for (size_t i = s->nchildren; i-- > 0;)
		child_stop(s, &s->children[i], s->children[i].pid > 0 ? grace : 0);
	for (;;) {
		struct pollfd p = { .fd = sig_pipe[0], .events = POLLIN };
		char buf[64];
		int running = 0;
		for (size_t i = 0; i < s->nchildren; i++)
			running |= s->children[i].pid > 0;
		if (!running)
			break;
		children_tick(s);
		(void)poll(&p, 1, 50);
		while (read(sig_pipe[0], buf, sizeof(buf)) > 0)
			;
		reap(s);
	}
}

int
main(int argc, char **argv)
{
	struct sup sup, *s = &sup;
	struct sigaction sa;
	struct pollfd *pfd = NULL;
	char path[4096], err[512];
	int check = 0, ready_logged = 0, rc = 0;
	struct decod_lease *lease;
	int64_t wd_interval, next_wd = 0;

	memset(s, 0, sizeof(*s));
	s->argv = xcalloc((size_t)argc + 1, sizeof(char *));
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage();
			return 0;
		}
		if (strcmp(argv[i], "--version") == 0) {
			printf("decod %s\n", PACKAGE_VERSION);
			return 0;
		}
		if (strcmp(argv[i], "--check-config") == 0) {
			check = 1;
			continue;
		}
		s->argv[s->argc++] = argv[i];
	}
	argc = s->argc;
	{
		char **copy = xcalloc((size_t)argc + 1, sizeof(char *));

		memcpy(copy, s->argv, (size_t)argc * sizeof(char *));
		s->cf = conf_from_args(&argc, copy);
		if (s->cf != NULL) {
			conf_set_reader(s->cf, "decod");
			json_set_max_depth((int)conf_get_int(s->cf, "json_max_depth"));
		}
		if (s->cf != NULL && argc > 1) {
			fprintf(stderr, "decod: unknown argument \"%s\" (see --help)\n", copy[1]);
			free(copy);
			return 2;
		}
		free(copy);
	}
	if (s->cf == NULL)
		return check ? 1 : 2;
	if (check) {
		const char *name = *conf_path(s->cf) ? conf_path(s->cf) : "(defaults)";
		int bad = decod_check(s->cf, stdout);

		if (bad > 0) {
			printf("%s: %d error%s\n", name, bad, bad == 1 ? "" : "s");
			return 1;
		}
		printf("%s: OK\n", name);
		return 0;
	}
	/* a stage without a program would only die and be restarted, forever */
	if (decod_check(s->cf, stderr) > 0) {
		fprintf(stderr, "decod: the configuration has errors; not starting\n");
		return DECOD_EXIT_CONFIG;
	}
	log_init("decod", log_parse_level(conf_get(s->cf, "log_level")),
	    log_parse_format(conf_get(s->cf, "log_format")));
	if (mkdir_p(conf_get(s->cf, "state_dir"), 0700) < 0)
		fatal("state_dir %s: %s", conf_get(s->cf, "state_dir"), strerror(errno));
	if (mkdir_p(conf_get(s->cf, "runtime_dir"), 0700) < 0)
		fatal("runtime_dir %s: %s", conf_get(s->cf, "runtime_dir"), strerror(errno));
	snprintf(path, sizeof(path), "%s/journal.db", conf_get(s->cf, "state_dir"));
	if ((s->j = journal_open(path, err, sizeof(err))) == NULL)
		fatal("%s", err);
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		fatal("pipe: %s", strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_NOCLDSTOP;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (decod_metrics_start(s) < 0)
		return DECOD_EXIT_CONFIG;
	if (ctl_open(s) < 0)
		fatal("cannot open the control socket in %s", conf_get(s->cf, "runtime_dir"));
	journal_audit(s->j, "decod", "-", "start", "");
	/* with a cluster and the local store: stand by until this decod leads */
	if ((lease = decod_lease_new(s->cf, err, sizeof(err))) == NULL && err[0] != '\0')
		fatal("Kubernetes configuration: %s", err);
	s->lease = lease;
	/* the stages to run once leading: a standby lists them (decoctl stages) */
	set_children(s);
	decod_metrics_update(s);
	s->standby = lease != NULL && !decod_lease_leading(lease);
	while (s->standby && !got_term) {
		struct pollfd lp[3] = { { .fd = sig_pipe[0], .events = POLLIN },
			{ .fd = decod_lease_fd(lease), .events = POLLIN },
			{ .fd = ctl_fd(), .events = POLLIN } };
		int64_t t = decod_lease_timeout(lease);
		char b[64];

		(void)poll(lp, 3, t < 0 || t > 1000 ? 1000 : (int)t);
		if (lp[0].revents & POLLIN)
			while (read(sig_pipe[0], b, sizeof(b)) > 0)
				;
		decod_lease_dispatch(lease);
		if (lp[2].revents & POLLIN)
			ctl_handle(s);
		s->standby = !decod_lease_leading(lease);
	}
	for (size_t i = 0; i < s->nchildren; i++) {
		s->children[i].digest = child_digest(s->cf, s->children[i].name, 0);
		s->children[i].live_digest = child_digest(s->cf, s->children[i].name, 1);
		child_event(s, &s->children[i], CHILD_EV_START);
	}
	wd_interval = sd_watchdog_interval_ms();
	log_kv(LOG_INFO, "supervisor running", "stages", conf_get(s->cf, "stages"), NULL);

	while (!got_term) {
		size_t n = 0;
		int64_t timeout = children_next_event(s) - now_ms();
		char buf[64];

		if (wd_interval > 0 && now_ms() >= next_wd) {
			sd_notify_send("WATCHDOG=1");
			next_wd = now_ms() + wd_interval;
		}
		if (wd_interval > 0 && next_wd - now_ms() < timeout)
			timeout = next_wd - now_ms();
		pfd = xrealloc(pfd, (s->nchildren + 3) * sizeof(*pfd));
		pfd[n++] = (struct pollfd){ .fd = sig_pipe[0], .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = ctl_fd(), .events = POLLIN };
		for (size_t i = 0; i < s->nchildren; i++)
			pfd[n++] = (struct pollfd){ .fd = s->children[i].status_fd, .events = POLLIN };
		if (lease != NULL) {
			int64_t lt = decod_lease_timeout(lease);

			pfd[n++] = (struct pollfd){ .fd = decod_lease_fd(lease), .events = POLLIN };
			if (lt >= 0 && (timeout < 0 || lt < timeout))
				timeout = lt;
		}
		if (poll(pfd, n, timeout < 0 ? 0 : (int)timeout) < 0 && errno != EINTR)
			fatal("poll: %s", strerror(errno));
		if (pfd[0].revents & POLLIN)
			while (read(sig_pipe[0], buf, sizeof(buf)) > 0)
				;
		if (got_chld) {
			got_chld = 0;
			reap(s);
		}
		for (size_t i = 0; i < s->nchildren; i++)
			if (pfd[2 + i].fd >= 0 && pfd[2 + i].revents)
				child_status_readable(s, &s->children[i]);
		if (pfd[1].revents & POLLIN)
			ctl_handle(s);
		if (got_hup) {
			got_hup = 0;
			reload(s);
		}
		if (lease != NULL) {
			decod_lease_dispatch(lease);
			if (decod_lease_lost(lease)) {
				/* as controller-runtime: a leader that lost its lease stops */
				log_kv(LOG_ERROR, "leader election lost: stopping the stages", NULL);
				rc = 1;
				break;
			}
		}
		children_tick(s);
		decod_metrics_update(s);
		if (children_all_ready(s)) {
			if (!s->sd_ready_sent) {
				sd_notify_send("READY=1");
				s->sd_ready_sent = 1;
			}
			if (!ready_logged)
				log_kv(LOG_INFO, "all stages ready", NULL);
			ready_logged = 1;
		}
	}
	shutdown_all(s);
	decod_lease_free(lease);
	ctl_close();
	journal_audit(s->j, "decod", "-", "stop", "");
	journal_close(s->j);
	log_kv(LOG_INFO, "supervisor stopped", NULL);
	for (size_t i = 0; i < s->nchildren; i++) {
		free(s->children[i].digest);
		free(s->children[i].live_digest);
	}
	free(s->children);
	free(pfd);
	free(s->argv);
	conf_free(s->cf);
	return rc;
}

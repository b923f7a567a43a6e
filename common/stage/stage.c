/*
 * stage - the skeleton every stage daemon runs on (see stage.h).  Start-up
 * order is fixed: config, logging, folders, journal, spool, store, nng
 * sockets, the stage's init, readiness; then one poll() loop owns
 * everything.  Work comes from the journal: a doorbell on the PULL socket
 * or the rescan timer makes the loop read due items, so a lost message
 * costs at most one rescan interval; the items, their transactions and
 * doorbells are stage_items.c's.  This file holds start-up, signals, the
 * fds and timers, and the loop.  The supervisor's status socket (fd in
 * DECOD_STATUS_FD) carries "READY"; its EOF means the supervisor is gone
 * and the stage exits.
 *
 * Health without a listener: once ready, the loop touches
 * <runtime_dir>/<stage>.alive every HEARTBEAT_MS (removed at start and at
 * a clean exit).  `<stage> --health[=SECONDS] -c FILE` exits 0 only when
 * that file is younger than SECONDS (default STAGE_HEALTH_MAX_AGE_S): the
 * Kubernetes exec probe of deploy/, which works whatever address the
 * stage's nng socket is bound to, and fails for a hung loop as well as for
 * a dead process.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>

#include "common/conf.h"
#include "common/housekeeping.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/log.h"
#include "common/spool.h"
#include "common/stage.h"
#include "common/stage_ctl.h"
#include "common/stage_health.h"
#include "common/stage_impl.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"

#define HEARTBEAT_MS 2000
#define TIMER_SLICE_MS 20	/* due timers run this long per loop turn at most */
#define STOP_GRACE_S 10	/* the teardown after "stopped" ends within this (SIGALRM) */

struct fdent {
	int fd;
	short events;
	stage_fd_cb cb;
	void *arg;
};

static void housekeeping_timer(struct stage *st, void *arg);

static int sig_pipe[2] = { -1, -1 };
static volatile sig_atomic_t sig_term, sig_hup;
static int wake_pipe[2] = { -1, -1 };

static void
on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	if (sig == SIGHUP)
		sig_hup = 1;
	else
		sig_term = 1;
	if (write(sig_pipe[1], &c, 1) < 0) {
		/* the pipe is full: the loop wakes anyway */
	}
	errno = saved;
}

const char *
stage_addr(struct conf *cf, const char *name)
{
	static char addr[1100];
	char setting[64];
	const struct conf_setting *s;

	snprintf(setting, sizeof(setting), "addr_%s", name);
	for (s = conf_settings(); s->name != NULL; s++) {
		if (strcmp(s->name, setting) == 0 && *conf_get(cf, setting) != '\0') {
			snprintf(addr, sizeof(addr), "%s", conf_get(cf, setting));
			return addr;
		}
	}
	snprintf(addr, sizeof(addr), "ipc://%s/%s.ipc", conf_get(cf, "runtime_dir"), name);
	return addr;
}

struct conf *
stage_conf(struct stage *st)
{
	return st->cf;
}

struct journal *
stage_journal(struct stage *st)
{
	return st->j;
}

struct spool *
stage_spool(struct stage *st)
{
	return st->sp;
}

struct store *
stage_store(struct stage *st)
{
	return st->store;
}

const char *
stage_name(struct stage *st)
{
	return st->ops->name;
}

void *
stage_data(struct stage *st)
{
	return st->data;
}

void
stage_set_data(struct stage *st, void *data)
{
	st->data = data;
}

int
stage_supervised(struct stage *st)
{
	return st->status_fd >= 0;
}

int
stage_stopping(struct stage *st)
{
	(void)st;
	return sig_term != 0;
}
void
stage_kick(struct stage *st)
{
	st->kick = 1;
}

void
stage_wake(struct stage *st)
{
	char c = 'w';

	(void)st;
	if (write(wake_pipe[1], &c, 1) < 0) {
		/* full pipe: a wake-up is already pending */
	}
}

void
stage_set_wake_cb(struct stage *st, void (*cb)(struct stage *, void *), void *arg)
{
	st->wake_cb = cb;
	st->wake_arg = arg;
}

int
stage_add_fd(struct stage *st, int fd, short events, stage_fd_cb cb, void *arg)
{
	for (size_t i = 0; i < st->nfds; i++) {
		if (st->fds[i].fd == fd) {
			st->fds[i].events = events;
			st->fds[i].cb = cb;
			st->fds[i].arg = arg;
			return 0;
		}
	}
	st->fds = xrealloc(st->fds, (st->nfds + 1) * sizeof(*st->fds));
	st->fds[st->nfds].fd = fd;
	st->fds[st->nfds].events = events;
	st->fds[st->nfds].cb = cb;
	st->fds[st->nfds].arg = arg;
	st->nfds++;
	return 0;
}

void
stage_mod_fd(struct stage *st, int fd, short events)
{
	for (size_t i = 0; i < st->nfds; i++)
		if (st->fds[i].fd == fd)
			st->fds[i].events = events;
}

void
stage_del_fd(struct stage *st, int fd)
{
	for (size_t i = 0; i < st->nfds; i++) {
		if (st->fds[i].fd == fd) {
			st->fds[i] = st->fds[--st->nfds];
			return;
		}
	}
}

/*
 * stage_check_supervisor - between items, notice at once that the
 * supervisor is gone (EOF on the status socket), so a busy stage still
 * exits promptly.
 */
void
stage_check_supervisor(struct stage *st)
{
	struct pollfd p = { .fd = st->status_fd, .events = POLLIN };
	char buf[64];
	ssize_t r;

	if (st->status_fd < 0 || poll(&p, 1, 0) <= 0)
		return;
	r = read(st->status_fd, buf, sizeof(buf));
	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
		log_kv(LOG_WARN, "supervisor is gone; exiting", NULL);
		close(st->status_fd);
		st->status_fd = -1;
		sig_term = 1;
	}
}

void
stage_yield(struct stage *st)
{
	int64_t now = now_ms();

	if (now == st->yielded)
		return;
	st->yielded = now;
	stage_check_supervisor(st);
}

static void
usage(const struct stage_ops *ops)
{
	printf("usage: %s [-c FILE] [--SETTING VALUE ...]\n"
	    "The %s stage of decod.  It runs under the supervisor `decod` or alone\n"
	    "(one container or systemd unit per stage) with the same config file.\n"
	    "  --health[=SECONDS]  probe a running %s: exit 0 when its heartbeat\n"
	    "                      (runtime_dir/%s.alive) is at most SECONDS old\n"
	    "                      (default %d), else 1\n\n",
	    ops->name, ops->name, ops->name, ops->name, STAGE_HEALTH_MAX_AGE_S);
	conf_print_help(stdout);
}

static int
setup(struct stage *st)
{
	const char *state = conf_get(st->cf, "state_dir");
	char path[4096], err[512];
	const char *env;

	log_init(st->ops->name, log_parse_level(conf_get(st->cf, "log_level")),
	    log_parse_format(conf_get(st->cf, "log_format")));
	if (mkdir_p(state, 0700) < 0)
		fatal("state_dir %s: %s", state, strerror(errno));
	if (mkdir_p(conf_get(st->cf, "runtime_dir"), 0700) < 0)
		fatal("runtime_dir %s: %s", conf_get(st->cf, "runtime_dir"), strerror(errno));
	snprintf(path, sizeof(path), "%s/journal.db", state);
	if ((st->j = journal_open(path, err, sizeof(err))) == NULL)
		fatal("%s", err);
	snprintf(path, sizeof(path), "%s/spool", state);
	if ((st->sp = spool_open(path)) == NULL)
		fatal("spool %s: %s", path, strerror(errno));
	keys_set_prefix(conf_get(st->cf, "store_prefix"));
	if (st->ops->use_store &&
	    (st->store = store_open(conf_get(st->cf, "store"), st->cf, err, sizeof(err))) == NULL)
		fatal("%s", err);
	if (stage_open_pull(st) < 0)
		fatal("cannot set up the %s pipeline socket", st->ops->name);
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0 ||
	    pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		fatal("pipe: %s", strerror(errno));
	st->status_fd = -1;
	if ((env = getenv("DECOD_STATUS_FD")) != NULL) {
		st->status_fd = atoi(env);
		if (fcntl(st->status_fd, F_GETFD) < 0)
			st->status_fd = -1;
		else
			set_cloexec(st->status_fd);
		unsetenv("DECOD_STATUS_FD");
	}
	return 0;
}

static void
install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

/* reload - re-read the config file; keep the old one if the new is bad */
static void
reload(struct stage *st)
{
	int argc = st->argc;
	char **argv = xcalloc((size_t)argc + 1, sizeof(char *));
	struct conf *cf;

	memcpy(argv, st->argv, (size_t)argc * sizeof(char *));
	if ((cf = conf_from_args(&argc, argv)) == NULL) {
		log_kv(LOG_ERROR, "reload: config has errors; keeping the running one", NULL);
		free(argv);
		return;
	}
	conf_set_reader(cf, st->ops->name);
	json_set_max_depth((int)conf_get_int(cf, "json_max_depth"));
	free(argv);
	conf_free(st->cf);
	st->cf = cf;
	log_init(st->ops->name, log_parse_level(conf_get(cf, "log_level")),
	    log_parse_format(conf_get(cf, "log_format")));
	/* a new housekeeping_interval takes effect now, not after the old one */
	if (st->hk_timer != 0 && conf_get_ms(cf, "housekeeping_interval") != st->hk_interval) {
		stage_cancel_timer(st, st->hk_timer);
		st->hk_interval = conf_get_ms(cf, "housekeeping_interval");
		st->hk_timer = stage_add_timer(st, st->hk_interval, housekeeping_timer, NULL);
	}
	if (st->ops->reload != NULL && st->ops->reload(st) < 0)
		log_kv(LOG_ERROR, "reload failed", NULL);
	log_kv(LOG_INFO, "reloaded configuration", NULL);
}

/*
 * housekeeping_timer - prune and collect (housekeeping.c) with the
 * settings as they are now, so a SIGHUP changing journal_retention applies
 * at the next run; then schedule the next run
 */
static void
housekeeping_timer(struct stage *st, void *arg)
{
	(void)arg;
	st->hk_timer = 0;
	(void)housekeeping_run(st->j, st->sp, conf_get_ms(st->cf, "journal_retention"),
	    (int)conf_get_int(st->cf, "history_keep"));
	st->hk_interval = conf_get_ms(st->cf, "housekeeping_interval");
	st->hk_timer = stage_add_timer(st, st->hk_interval, housekeeping_timer, NULL);
}

/* heartbeat_timer - touch the heartbeat file (make it if it is gone) */
static void
heartbeat_timer(struct stage *st, void *arg)
{
	(void)arg;
	stage_alive_touch(st->alive_path);
	(void)stage_add_timer(st, HEARTBEAT_MS, heartbeat_timer, NULL);
}

static int
loop_timeout(struct stage *st)
{
	int64_t now = now_ms(), next = st->next_rescan, t;

	if (st->kick)
		return 0;
	next = stage_timers_next(st, next);
	if (st->ops->on_timer != NULL && st->next_ops_timer < next)
		next = st->next_ops_timer;
	if (st->next_due_wall > 0) {
		t = now + (st->next_due_wall - wall_ms());
		if (t < next)
			next = t;
	}
	t = next - now;
	return t < 0 ? 0 : (t > 60000 ? 60000 : (int)t);
}

int
stage_main(int argc, char **argv, const struct stage_ops *ops)
{
	struct stage *st = xcalloc(1, sizeof(*st));
	struct pollfd *pfd = NULL;
	int64_t stop_deadline = 0, rescan_ms;
	char buf[256];
	long health = -1;	/* --health[=SECONDS]: probe, do not run */

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(ops);
			return 0;
		}
		if (strcmp(argv[i], "--health") == 0 || strncmp(argv[i], "--health=", 9) == 0) {
			char *end = NULL;

			health = STAGE_HEALTH_MAX_AGE_S;
			if (argv[i][8] == '=') {
				errno = 0;
				health = strtol(argv[i] + 9, &end, 10);
				if (errno != 0 || end == argv[i] + 9 || *end != '\0' || health < 1) {
					fprintf(stderr, "%s: --health=SECONDS wants a number of "
					    "seconds >= 1\n", ops->name);
					return 2;
				}
			}
			memmove(&argv[i], &argv[i + 1], (size_t)(argc - i) * sizeof(char *));
			argc--;
			i--;
		}
	}
	if (health > 0) {
		struct conf *cf = conf_from_args(&argc, argv);
		int rc;

		if (cf == NULL)
			return 2;
		if (argc > 1) {
			fprintf(stderr, "%s: unknown argument \"%s\" (see --help)\n", ops->name,
			    argv[1]);
			conf_free(cf);
			return 2;
		}
		rc = stage_health_check(cf, ops->name, health);
		conf_free(cf);
		return rc;
	}
	st->ops = ops;
	st->argc = argc;
	st->argv = xcalloc((size_t)argc + 1, sizeof(char *));
	memcpy(st->argv, argv, (size_t)argc * sizeof(char *));
	if ((st->cf = conf_from_args(&argc, argv)) == NULL)
		return 2;
	conf_set_reader(st->cf, ops->name);
	json_set_max_depth((int)conf_get_int(st->cf, "json_max_depth"));
	if (argc > 1) {
		fprintf(stderr, "%s: unknown argument \"%s\" (see --help)\n", ops->name, argv[1]);
		return 2;
	}
	install_signals();
	/* a heartbeat left by an earlier run (a killed container) is not ours */
	stage_alive_path(st->cf, ops->name, st->alive_path, sizeof(st->alive_path));
	(void)unlink(st->alive_path);
	setup(st);
	if (stage_metrics_start(st) < 0)
		exit(EX_CONFIG);	/* a restart would not help: the settings are wrong */
	if (ops->init != NULL && ops->init(st) < 0)
		fatal("%s: init failed", ops->name);
	stage_metrics_run(st);	/* bound above: a bad port exits before init */
	journal_audit(st->j, ops->name, "-", "start", "");
	if (ops->housekeeping) {
		st->hk_interval = conf_get_ms(st->cf, "housekeeping_interval");
		st->hk_timer = stage_add_timer(st, st->hk_interval < 60000 ? st->hk_interval :
		    60000, housekeeping_timer, NULL);
	}
	rescan_ms = conf_get_ms(st->cf, "rescan_interval");
	st->kick = 1;			/* claim what an earlier run left */
	st->next_rescan = now_ms() + rescan_ms;
	st->next_ops_timer = now_ms() + (ops->timer_ms > 0 ? ops->timer_ms : 0);
	if (st->status_fd >= 0 && write(st->status_fd, "READY\n", 6) != 6)
		log_kv(LOG_WARN, "cannot report readiness", "error", strerror(errno), NULL);
	heartbeat_timer(st, NULL);
	if (st->status_fd < 0)
		st->ctl = stage_ctl_open(st);
	log_kv(LOG_INFO, "ready", "addr", stage_addr(st->cf, ops->name), NULL);

	for (;;) {
		size_t n = 0, base;
		int rc;

		if (sig_term && stop_deadline == 0) {
			stop_deadline = now_ms() + conf_get_ms(st->cf, "stop_timeout");
			log_kv(LOG_INFO, "stopping: draining", NULL);
		}
		if (stop_deadline != 0 && (st->ninflight == 0 || now_ms() >= stop_deadline))
			break;
		if (sig_hup) {
			sig_hup = 0;
			reload(st);
		}
		if (!sig_term && (st->kick || now_ms() >= st->next_rescan)) {
			if (now_ms() >= st->next_rescan)
				st->next_rescan = now_ms() + rescan_ms;
			stage_process_due(st);
		}
		if (ops->on_timer != NULL && now_ms() >= st->next_ops_timer) {
			st->next_ops_timer = now_ms() + ops->timer_ms;
			ops->on_timer(st);
		}
		pfd = xrealloc(pfd, (st->nfds + 4) * sizeof(*pfd));
		pfd[n++] = (struct pollfd){ .fd = sig_pipe[0], .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = wake_pipe[0], .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = st->pull_fd, .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = st->status_fd, .events = POLLIN };
		base = n;
		for (size_t i = 0; i < st->nfds; i++)
			pfd[n++] = (struct pollfd){ .fd = st->fds[i].fd, .events = st->fds[i].events };
		rc = poll(pfd, n, stop_deadline ? 100 : loop_timeout(st));
		if (rc < 0 && errno != EINTR)
			fatal("poll: %s", strerror(errno));
		if (rc > 0) {
			if (pfd[0].revents & POLLIN)
				while (read(sig_pipe[0], buf, sizeof(buf)) > 0)
					;
			if (pfd[1].revents & POLLIN) {
				while (read(wake_pipe[0], buf, sizeof(buf)) > 0)
					;
				if (st->wake_cb != NULL)
					st->wake_cb(st, st->wake_arg);
			}
			if (pfd[2].revents & POLLIN)
				stage_recv_doorbells(st);
			if (st->status_fd >= 0 && (pfd[3].revents & (POLLIN | POLLHUP | POLLERR)))
				stage_check_supervisor(st);
			/* callbacks may add or remove fds: match by fd, not index */
			for (size_t i = base; i < n; i++) {
				if (pfd[i].revents == 0)
					continue;
				for (size_t k = 0; k < st->nfds; k++) {
					if (st->fds[k].fd == pfd[i].fd) {
						st->fds[k].cb(st, pfd[i].fd, pfd[i].revents,
						    st->fds[k].arg);
						break;
					}
				}
			}
		}
		/*
		 * the due timers, for TIMER_SLICE_MS at most: the rest run on the
		 * next turn, after the fds had theirs (10,000 decofiles' polls due
		 * at once at a start-up must not hold a list page or a doorbell for
		 * seconds)
		 */
		stage_timers_run(st, TIMER_SLICE_MS);
	}
	if (ops->shutdown != NULL)
		ops->shutdown(st);
	stage_ctl_close(st, st->ctl);
	stage_metrics_stop(st);
	(void)unlink(st->alive_path);
	journal_audit(st->j, ops->name, "-", "stop", st->ninflight ? "drain timed out" : "");
	log_kv(LOG_INFO, "stopped", NULL);
	/*
	 * The journal holds the truth by now; what follows only frees.  nng
	 * 1.5.2's nng_close was seen to block for good on the PULL socket of a
	 * stage whose supervisor had been killed (the chaos soak: an orphan
	 * notifier, its status socket at EOF, waiting in nng_close 18 minutes
	 * later).  A teardown that does not end within STOP_GRACE_S ends by
	 * SIGALRM's default action instead of outliving its supervisor.
	 */
	signal(SIGALRM, SIG_DFL);
	alarm(STOP_GRACE_S);
	for (int i = 0; i < st->npushers; i++)
		nng_close(st->pushers[i].sock);
	nng_close(st->pull);
	store_close(st->store);
	spool_close(st->sp);
	journal_close(st->j);
	conf_free(st->cf);
	free(pfd);
	free(st->fds);
	stage_timers_free(st);
	free(st->inflight);
	free(st->inflight_t0);
	free(st->argv);
	free(st);
	return 0;
}

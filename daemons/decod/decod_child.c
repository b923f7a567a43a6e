/*
 * decod_child - one stage process and its states: DOWN, STARTING, READY,
 * STOPPING, BACKOFF.  A child is forked and exec'd at once (nng is not
 * fork-safe); its status socket is its fd 3: it writes READY there, and its
 * EOF tells the child that the supervisor is gone.  A dead child is
 * restarted after restart_min doubling per consecutive failure up to
 * restart_max; a child that stayed up stable_after is forgiven.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "common/conf.h"
#include "common/journal.h"
#include "common/log.h"
#include "common/util.h"
#include "daemons/decod/decod.h"

const char *
child_state_name(enum child_state st)
{
	static const char *const names[] = { "DOWN", "STARTING", "READY", "STOPPING", "BACKOFF" };

	return names[st];
}

/*
 * child_digest - the settings stage name reads (by the readers column of
 * the settings table), live ones or the others; caller frees
 */
char *
child_digest(struct conf *cf, const char *name, int live)
{
	return conf_stage_digest(cf, name, live);
}

static void
audit(struct sup *s, struct child *c, const char *action, const char *detail)
{
	if (s->j != NULL && journal_audit(s->j, "decod", c->name, action, detail) < 0)
		log_kv(LOG_WARN, "journal: cannot write audit row", "error",
		    journal_error(s->j), NULL);
}

/* exec_child - in the child: fd 3 is the status socket, then exec */
static void
exec_child(struct sup *s, struct child *c, int fd)
{
	char **argv = xcalloc((size_t)s->argc + 2, sizeof(char *));
	sigset_t none;
	int i, n = 0;

	if (fd != 3) {
		if (dup2(fd, 3) < 0)
			_exit(127);
		close(fd);
	} else {
		fcntl(3, F_SETFD, 0);
	}
	for (i = 4; i < 1024; i++)
		close(i);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	setenv("DECOD_STATUS_FD", "3", 1);
	argv[n++] = c->path;
	for (i = 1; i < s->argc; i++)
		argv[n++] = s->argv[i];
	argv[n] = NULL;
	execv(c->path, argv);
	fprintf(stderr, "decod: cannot run %s: %s\n", c->path, strerror(errno));
	_exit(127);
}

void
child_start(struct sup *s, struct child *c)
{
	int sv[2];
	pid_t pid;
	char detail[64];

	snprintf(c->path, sizeof(c->path), "%s/%s", conf_get(s->cf, "libexec_dir"), c->name);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		log_kv(LOG_ERROR, "socketpair failed", "stage", c->name, "error",
		    strerror(errno), NULL);
		c->state = CHILD_BACKOFF;
		c->next_start = now_ms() + 1000;
		return;
	}
	if ((pid = fork()) < 0) {
		log_kv(LOG_ERROR, "fork failed", "stage", c->name, "error", strerror(errno), NULL);
		close(sv[0]);
		close(sv[1]);
		c->state = CHILD_BACKOFF;
		c->next_start = now_ms() + 1000;
		return;
	}
	if (pid == 0) {
		close(sv[0]);
		exec_child(s, c, sv[1]);
	}
	close(sv[1]);
	set_nonblock(sv[0]);
	if (c->started != 0)
		c->restarts++;
	c->pid = pid;
	c->status_fd = sv[0];
	c->state = CHILD_STARTING;
	c->started = now_ms();
	c->ready_at = 0;
	c->kill_at = 0;
	snprintf(detail, sizeof(detail), "%ld", (long)pid);
	log_kv(LOG_INFO, "stage started", "stage", c->name, "pid", detail, NULL);
	snprintf(detail, sizeof(detail), "pid=%ld restarts=%u", (long)pid, c->restarts);
	audit(s, c, c->restarts ? "restart" : "start", detail);
}

void
child_stop(struct sup *s, struct child *c, int64_t grace_ms)
{
	(void)s;
	if (c->pid <= 0) {
		if (c->state == CHILD_BACKOFF || c->state == CHILD_STARTING)
			c->state = CHILD_DOWN;
		return;
	}
	if (c->state != CHILD_STOPPING) {
		kill(c->pid, SIGTERM);
		c->state = CHILD_STOPPING;
		c->kill_at = now_ms() + grace_ms;
	}
}

void
child_status_readable(struct sup *s, struct child *c)
{
	char buf[256];
	ssize_t n = read(c->status_fd, buf, sizeof(buf) - 1);

	if (n > 0) {
		buf[n] = '\0';
		if (strstr(buf, "READY") != NULL && c->state == CHILD_STARTING) {
			c->state = CHILD_READY;
			c->ready_at = now_ms();
			log_kv(LOG_INFO, "stage ready", "stage", c->name, NULL);
			audit(s, c, "ready", "");
		}
		return;
	}
	if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		/* the child closed it or died: waitpid will tell the rest */
		close(c->status_fd);
		c->status_fd = -1;
	}
}

/* backoff_ms - restart_min doubled per consecutive failure, capped */
static int64_t
backoff_ms(struct sup *s, struct child *c)
{
	int64_t d = conf_get_ms(s->cf, "restart_min");
	int64_t max = conf_get_ms(s->cf, "restart_max");

	for (unsigned i = 1; i < c->failures && d < max; i++)
		d *= 2;
	return d < max ? d : max;
}

void
child_reaped(struct sup *s, pid_t pid, int status)
{
	char detail[128], delay[32];
	struct child *c = NULL;
	int64_t up;

	for (size_t i = 0; i < s->nchildren; i++)
		if (s->children[i].pid == pid)
			c = &s->children[i];
	if (c == NULL)
		return;
	if (WIFEXITED(status))
		snprintf(detail, sizeof(detail), "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(detail, sizeof(detail), "killed by signal %d", WTERMSIG(status));
	else
		snprintf(detail, sizeof(detail), "status 0x%x", status);
	up = now_ms() - c->started;
	if (c->status_fd >= 0) {
		close(c->status_fd);
		c->status_fd = -1;
	}
	c->pid = 0;
	audit(s, c, "exit", detail);
	if (s->stopping || c->admin_down || c->removed) {
		c->state = CHILD_DOWN;
		log_kv(LOG_INFO, "stage stopped", "stage", c->name, "status", detail, NULL);
		return;
	}
	if (c->restart_now) {
		c->restart_now = 0;
		c->failures = 0;
		c->state = CHILD_BACKOFF;
		c->next_start = now_ms();
		return;
	}
	/* forgiven after a stable run; a death before ready always counts */
	if (c->ready_at != 0 && up >= conf_get_ms(s->cf, "stable_after"))
		c->failures = 0;
	c->failures++;
	c->state = CHILD_BACKOFF;
	c->next_start = now_ms() + backoff_ms(s, c);
	snprintf(delay, sizeof(delay), "%lldms", (long long)backoff_ms(s, c));
	log_kv(LOG_WARN, c->ready_at ? "stage died; restarting" :
	    "stage died before it was ready; restarting", "stage", c->name, "status",
	    detail, "delay", delay, NULL);
}

void
children_tick(struct sup *s)
{
	int64_t now = now_ms();

	for (size_t i = 0; i < s->nchildren; i++) {
		struct child *c = &s->children[i];

		if (c->state == CHILD_BACKOFF && !s->stopping && !c->admin_down &&
		    !c->removed && now >= c->next_start)
			child_start(s, c);
		else if (c->state == CHILD_STOPPING && c->pid > 0 && now >= c->kill_at) {
			log_kv(LOG_WARN, "stage did not stop in time; killing", "stage",
			    c->name, NULL);
			kill(c->pid, SIGKILL);
			c->kill_at = now + 60000;
		} else if (c->state == CHILD_STARTING && c->pid > 0 &&
		    now - c->started >= conf_get_ms(s->cf, "ready_timeout")) {
			log_kv(LOG_WARN, "stage not ready in time; killing", "stage",
			    c->name, NULL);
			kill(c->pid, SIGKILL);
			c->state = CHILD_STOPPING;
			c->kill_at = now + 60000;
		}
	}
}

int64_t
children_next_event(struct sup *s)
{
	int64_t next = now_ms() + 1000;

	for (size_t i = 0; i < s->nchildren; i++) {
		struct child *c = &s->children[i];

		if (c->state == CHILD_BACKOFF && c->next_start < next)
			next = c->next_start;
		if (c->state == CHILD_STOPPING && c->kill_at < next)
			next = c->kill_at;
	}
	return next;
}

int
children_all_ready(struct sup *s)
{
	for (size_t i = 0; i < s->nchildren; i++)
		if (!s->children[i].removed && !s->children[i].admin_down &&
		    s->children[i].state != CHILD_READY)
			return 0;
	return 1;
}

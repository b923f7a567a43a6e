/*
 * decod_child - one stage process: child_event() moves it through the
 * table of decod_fsm.c and performs the action.  A child is forked and
 * exec'd at once with argv and environment built before fork (nng is not
 * fork-safe); its status socket is its fd 3: it writes READY there, and its
 * EOF tells the child that the supervisor is gone.  A dead child restarts
 * after restart_min doubling per failure up to restart_max; stable_after forgives.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "common/conf.h"
#include "common/journal.h"
#include "common/log.h"
#include "common/util.h"
#include "daemons/decod/decod.h"

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

/* what a child is given, all allocated before fork */
struct spawn_args {
	char **argv;
	char **envp;
	char *fail_msg;		/* written to stderr if exec fails */
	int max_fd;		/* close every fd from 4 below this */
};

/* spawn_args_build - argv (the stage path, then decod's flags), environ plus DECOD_STATUS_FD=3 */
static void
spawn_args_build(struct sup *s, struct child *c, struct spawn_args *a)
{
	extern char **environ;
	struct rlimit rl;
	size_t n = 0, k = 0;
	int i;

	a->argv = xcalloc((size_t)s->argc + 2, sizeof(char *));
	a->argv[n++] = c->path;
	for (i = 1; i < s->argc; i++)
		a->argv[n++] = s->argv[i];
	a->argv[n] = NULL;
	for (n = 0; environ[n] != NULL; n++)
		;
	a->envp = xcalloc(n + 2, sizeof(char *));
	for (n = 0; environ[n] != NULL; n++)
		if (strncmp(environ[n], "DECOD_STATUS_FD=", 16) != 0)
			a->envp[k++] = environ[n];
	a->envp[k++] = "DECOD_STATUS_FD=3";
	a->envp[k] = NULL;
	a->fail_msg = xasprintf("decod: cannot run %s\n", c->path);
	a->max_fd = 1024;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		a->max_fd = rl.rlim_cur > INT_MAX ? INT_MAX : (int)rl.rlim_cur;
	else if (sysconf(_SC_OPEN_MAX) > 0)
		a->max_fd = (int)sysconf(_SC_OPEN_MAX);
}

static void
spawn_args_free(struct spawn_args *a)
{
	free(a->argv);
	free(a->envp);
	free(a->fail_msg);
}

/*
 * exec_child - in the child, between fork and exec: only async-signal-safe
 * calls (nng's threads were not copied and may hold locks, so no malloc,
 * no stdio, no setenv).  The status socket becomes fd 3, the rest close.
 */
static void
exec_child(const struct spawn_args *a, int fd)
{
	struct sigaction dfl;
	sigset_t none;

	if (fd != 3) {
		if (dup2(fd, 3) < 0)
			_exit(127);
		close(fd);
	} else {
		fcntl(3, F_SETFD, 0);
	}
#ifdef HAVE_CLOSE_RANGE
	if (close_range(4, ~0U, 0) != 0)
#endif
		for (int i = 4; i < a->max_fd; i++)
			close(i);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGPIPE, &dfl, NULL);
	execve(a->argv[0], a->argv, a->envp);
	if (write(2, a->fail_msg, strlen(a->fail_msg)) < 0) {
		/* nothing more to say */
	}
	_exit(127);
}

/* spawn - socketpair, fork, exec; 0, or -1 with the error logged */
static int
spawn(struct sup *s, struct child *c)
{
	struct spawn_args a;
	int sv[2];
	pid_t pid;
	char detail[64];

	snprintf(c->path, sizeof(c->path), "%s/%s", conf_get(s->cf, "libexec_dir"), c->name);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		log_kv(LOG_ERROR, "socketpair failed", "stage", c->name, "error",
		    strerror(errno), NULL);
		return -1;
	}
	spawn_args_build(s, c, &a);
	if ((pid = fork()) < 0) {
		log_kv(LOG_ERROR, "fork failed", "stage", c->name, "error", strerror(errno), NULL);
		close(sv[0]);
		close(sv[1]);
		spawn_args_free(&a);
		return -1;
	}
	if (pid == 0) {
		close(sv[0]);
		exec_child(&a, sv[1]);
	}
	spawn_args_free(&a);
	close(sv[1]);
	set_nonblock(sv[0]);
	if (c->started != 0)
		c->restarts++;
	c->pid = pid;
	c->status_fd = sv[0];
	c->started = now_ms();
	c->ready_at = 0;
	c->kill_at = 0;
	snprintf(detail, sizeof(detail), "%ld", (long)pid);
	log_kv(LOG_INFO, "stage started", "stage", c->name, "pid", detail, NULL);
	snprintf(detail, sizeof(detail), "pid=%ld restarts=%u", (long)pid, c->restarts);
	audit(s, c, c->restarts ? "restart" : "start", detail);
	return 0;
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

/* signal_child - kill(2) the child's pid, never 0 or -1 (a process group) */
static void
signal_child(struct child *c, int sig)
{
	if (c->pid > 0)
		kill(c->pid, sig);
}

void
child_event(struct sup *s, struct child *c, enum child_ev ev)
{
	const struct child_rule *r = child_rule(c->state, ev);
	int64_t now = now_ms(), up;
	char delay[32];

	log_kv(LOG_DEBUG, "stage event", "stage", c->name, "state",
	    child_state_name(c->state), "event", child_ev_name(ev), "next",
	    child_state_name(r->next), NULL);
	c->state = r->next;
	switch (r->action) {
	case CHILD_ACT_NONE:
		break;
	case CHILD_ACT_SPAWN:
		if (spawn(s, c) < 0)
			child_event(s, c, CHILD_EV_SPAWN_FAILED);
		break;
	case CHILD_ACT_SPAWN_RETRY:
		c->next_start = now + 1000;
		break;
	case CHILD_ACT_READY:
		c->ready_at = now;
		log_kv(LOG_INFO, "stage ready", "stage", c->name, NULL);
		audit(s, c, "ready", "");
		break;
	case CHILD_ACT_BACKOFF:
		/* forgiven after a stable run; a death before ready always counts */
		up = now - c->started;
		if (c->ready_at != 0 && up >= conf_get_ms(s->cf, "stable_after"))
			c->failures = 0;
		c->failures++;
		c->next_start = now + backoff_ms(s, c);
		snprintf(delay, sizeof(delay), "%lldms", (long long)backoff_ms(s, c));
		log_kv(LOG_WARN, c->ready_at ? "stage died; restarting" :
		    "stage died before it was ready; restarting", "stage", c->name, "status",
		    c->exit_detail, "delay", delay, NULL);
		break;
	case CHILD_ACT_BACKOFF_NOW:
		c->restart_now = 0;
		c->failures = 0;
		c->next_start = now;
		break;
	case CHILD_ACT_DOWN:
		c->restart_now = 0;
		log_kv(LOG_INFO, "stage stopped", "stage", c->name, "status", c->exit_detail,
		    NULL);
		break;
	case CHILD_ACT_TERM_RESTART:
		c->restart_now = 1;
		c->grace_ms = conf_get_ms(s->cf, "stop_timeout");
		/* FALLTHROUGH */
	case CHILD_ACT_TERM:
		signal_child(c, SIGTERM);
		c->kill_at = now + c->grace_ms;
		break;
	case CHILD_ACT_MARK_RESTART:
		c->restart_now = 1;
		break;
	case CHILD_ACT_HUP:
		signal_child(c, SIGHUP);
		break;
	case CHILD_ACT_KILL:
		log_kv(LOG_WARN, "stage did not stop in time; killing", "stage", c->name, NULL);
		signal_child(c, SIGKILL);
		c->kill_at = now + 60000;
		break;
	case CHILD_ACT_KILL_UNREADY:
		log_kv(LOG_WARN, "stage not ready in time; killing", "stage", c->name, NULL);
		signal_child(c, SIGKILL);
		c->kill_at = now + 60000;
		break;
	}
}

void
child_stop(struct sup *s, struct child *c, int64_t grace_ms)
{
	c->grace_ms = grace_ms;
	child_event(s, c, CHILD_EV_STOP);
}

void
child_status_readable(struct sup *s, struct child *c)
{
	char buf[256];
	ssize_t n = read(c->status_fd, buf, sizeof(buf) - 1);

	if (n > 0) {
		buf[n] = '\0';
		if (strstr(buf, "READY") != NULL)
			child_event(s, c, CHILD_EV_READY);
		return;
	}
	if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		/* the child closed it or died: waitpid will tell the rest */
		close(c->status_fd);
		c->status_fd = -1;
	}
}

void
child_reaped(struct sup *s, pid_t pid, int status)
{
	struct child *c = NULL;

	for (size_t i = 0; i < s->nchildren; i++)
		if (s->children[i].pid == pid)
			c = &s->children[i];
	if (c == NULL)
		return;
	if (WIFEXITED(status))
		snprintf(c->exit_detail, sizeof(c->exit_detail), "exit status %d",
		    WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(c->exit_detail, sizeof(c->exit_detail), "killed by signal %d",
		    WTERMSIG(status));
	else
		snprintf(c->exit_detail, sizeof(c->exit_detail), "status 0x%x", status);
	if (c->status_fd >= 0) {
		close(c->status_fd);
		c->status_fd = -1;
	}
	c->pid = 0;
	audit(s, c, "exit", c->exit_detail);
	if (s->stopping || c->admin_down || c->removed)
		child_event(s, c, CHILD_EV_EXIT_WANTED);
	else if (c->restart_now)
		child_event(s, c, CHILD_EV_EXIT_RESTART);
	else
		child_event(s, c, CHILD_EV_EXIT);
}

/* deadline_passed - the deadline of c's state is behind us */
static int
deadline_passed(struct sup *s, struct child *c, int64_t now)
{
	switch (c->state) {
	case CHILD_BACKOFF:
		return !s->stopping && !c->admin_down && !c->removed && now >= c->next_start;
	case CHILD_STOPPING:
		return c->pid > 0 && now >= c->kill_at;
	case CHILD_STARTING:
		return c->pid > 0 && now - c->started >= conf_get_ms(s->cf, "ready_timeout");
	default:
		return 0;
	}
}

void
children_tick(struct sup *s)
{
	int64_t now = now_ms();

	for (size_t i = 0; i < s->nchildren; i++)
		if (deadline_passed(s, &s->children[i], now))
			child_event(s, &s->children[i], CHILD_EV_TIMEOUT);
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

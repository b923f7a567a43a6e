/*
 * fetch_run - the one place the fetcher starts programs.  fork, then exec
 * at once: the child makes its own process group (so a deadline kills
 * git's helpers too), wires stdin/stdout/stderr, closes every other fd and
 * execs.  The parent polls both pipes against the deadline.
 */
#include "config.h"

#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "daemons/fetcher/fetch_run.h"

#define ERR_KEEP 4096

static volatile int aborted;
static void (*trace_fn)(void *, char *const *, char *const *);
static void *trace_arg;

void
fetch_run_abort(void)
{
	__atomic_store_n(&aborted, 1, __ATOMIC_SEQ_CST);
}

int
fetch_run_aborted(void)
{
	return __atomic_load_n(&aborted, __ATOMIC_SEQ_CST);
}

void
fetch_run_trace(void (*fn)(void *arg, char *const *argv, char *const *envp), void *arg)
{
	trace_fn = fn;
	trace_arg = arg;
}

const char *
fetch_find_program(const char *name)
{
	static __thread char found[PATH_MAX];
	const char *path = getenv("PATH"), *p, *colon;
	size_t n;

	if (path == NULL || *path == '\0')
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; *p != '\0'; p = *colon ? colon + 1 : colon) {
		colon = strchr(p, ':');
		if (colon == NULL)
			colon = p + strlen(p);
		n = (size_t)(colon - p);
		if (n == 0 || n + strlen(name) + 2 > sizeof(found))
			continue;
		memcpy(found, p, n);
		snprintf(found + n, sizeof(found) - n, "/%s", name);
		if (access(found, X_OK) == 0)
			return found;
	}
	return NULL;
}

/* in the child: only async-signal-safe calls from here to exec */
static void
child(const struct fetch_cmd *c, int in, int outw, int errw)
{
	setpgid(0, 0);
	if (c->cwd != NULL && chdir(c->cwd) < 0)
		_exit(126);
	if (dup2(in, 0) < 0 || dup2(outw, 1) < 0 || dup2(errw, 2) < 0)
		_exit(126);
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 3U, ~0U, 0U) < 0)
#endif
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
	execve(c->path, c->argv, c->envp);
	_exit(127);
}

static void
drain(int *fd, struct buf *b, size_t cap, int *over)
{
	char tmp[65536];
	ssize_t n;

	n = read(*fd, tmp, sizeof(tmp));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		close(*fd);
		*fd = -1;
		return;
	}
	if (b == NULL)
		return;
	if (b->len + (size_t)n > cap) {
		if (over != NULL)
			*over = 1;
		n = (ssize_t)(cap > b->len ? cap - b->len : 0);
	}
	buf_add(b, tmp, (size_t)n);
}

int
fetch_run(const struct fetch_cmd *c, struct buf *out, struct buf *errout,
    char *err, size_t errlen)
{
	int op[2] = { -1, -1 }, ep[2] = { -1, -1 }, in = -1, status, over = 0;
	size_t max_out = c->max_out ? c->max_out : (size_t)64 << 20;
	struct buf ebuf;
	int64_t deadline = now_ms() + c->timeout_ms;
	int timed_out = 0;
	pid_t pid;

	buf_init(&ebuf);
	if (trace_fn != NULL)
		trace_fn(trace_arg, c->argv, c->envp);
	in = c->stdin_fd >= 0 ? c->stdin_fd : open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (in < 0 || pipe2(op, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "cannot make pipes: %s", strerror(errno));
		goto fail;
	}
	if ((pid = fork()) < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0)
		child(c, in, op[1], ep[1]);
	setpgid(pid, pid);	/* also here, so the kill below cannot miss */
	close(op[1]);
	close(ep[1]);
	op[1] = ep[1] = -1;
	while (op[0] >= 0 || ep[0] >= 0) {
		struct pollfd pf[2];
		int64_t left = deadline - now_ms();
		int np = 0;

		if (left <= 0 || over || __atomic_load_n(&aborted, __ATOMIC_SEQ_CST)) {
			timed_out = !over;
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			break;
		}
		if (op[0] >= 0)
			pf[np++] = (struct pollfd){ .fd = op[0], .events = POLLIN };
		if (ep[0] >= 0)
			pf[np++] = (struct pollfd){ .fd = ep[0], .events = POLLIN };
		if (poll(pf, (nfds_t)np, (int)(left > 1000 ? 1000 : left)) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < np; i++) {
			if (pf[i].revents == 0)
				continue;
			if (pf[i].fd == op[0])
				drain(&op[0], out, max_out, &over);
			else
				drain(&ep[0], &ebuf, ERR_KEEP, NULL);
		}
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	/* helpers left in the group (git-remote-*) go with it */
	kill(-pid, SIGKILL);
	if (op[0] >= 0)
		close(op[0]);
	if (ep[0] >= 0)
		close(ep[0]);
	if (c->stdin_fd < 0)
		close(in);
	if (errout != NULL)
		buf_add(errout, ebuf.data ? ebuf.data : "", ebuf.len);
	if (timed_out) {
		snprintf(err, errlen, "timed out after %lld ms", (long long)c->timeout_ms);
		buf_free(&ebuf);
		return -1;
	}
	if (over) {
		snprintf(err, errlen, "output larger than %zu bytes", max_out);
		buf_free(&ebuf);
		return -1;
	}
	buf_free(&ebuf);
	if (WIFSIGNALED(status)) {
		snprintf(err, errlen, "killed by signal %d", WTERMSIG(status));
		return -1;
	}
	if (WEXITSTATUS(status) == 127) {
		snprintf(err, errlen, "cannot run %s", c->path);
		return -1;
	}
	return WEXITSTATUS(status);
fail:
	if (in >= 0 && c->stdin_fd < 0)
		close(in);
	for (int i = 0; i < 2; i++) {
		if (op[i] >= 0)
			close(op[i]);
		if (ep[i] >= 0)
			close(ep[i]);
	}
	buf_free(&ebuf);
	return -1;
}

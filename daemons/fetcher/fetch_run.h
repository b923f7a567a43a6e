/*
 * fetch_run - run one program (git) with an argv and environment built by
 * the caller, never through a shell, with a deadline: stdout is collected
 * (bounded), stderr kept for the error message, and the whole process
 * group is killed when the deadline passes.  Safe to call from a worker
 * thread: between fork and exec the child only calls async-signal-safe
 * functions.
 */
#ifndef DECOD_FETCH_RUN_H
#define DECOD_FETCH_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

struct fetch_cmd {
	const char *path;		/* program to exec (absolute path) */
	char *const *argv;		/* NULL-terminated */
	char *const *envp;		/* NULL-terminated */
	const char *cwd;		/* NULL: inherit */
	int stdin_fd;			/* -1: /dev/null */
	int64_t timeout_ms;
	size_t max_out;			/* stdout cap in bytes (0: 64 MiB) */
};

/*
 * fetch_run - returns the exit status (0-255), or -1 when the program
 * could not start, was killed at its deadline, died by a signal or wrote
 * more than max_out (message in err).  out (may be NULL) gets stdout;
 * errout (may be NULL) gets the start of stderr, at most 4 KiB.
 */
int fetch_run(const struct fetch_cmd *c, struct buf *out, struct buf *errout,
    char *err, size_t errlen);

/*
 * fetch_run_trace - call fn(arg, argv, envp) before every exec (tests use
 * it to prove no secret reaches argv or the environment).  NULL: off.
 */
void fetch_run_trace(void (*fn)(void *arg, char *const *argv, char *const *envp), void *arg);

/*
 * fetch_run_abort - thread-safe: make every running and later fetch_run
 * kill its program within a second and fail (used at shutdown).
 */
void fetch_run_abort(void);

/* fetch_run_aborted - nonzero once fetch_run_abort was called (HTTP transfers stop too) */
int fetch_run_aborted(void);

/* fetch_find_program - absolute path of name found on PATH (static buffer), or NULL */
const char *fetch_find_program(const char *name);

#endif

/*
 * decod.h - the supervisor's own parts: children (decod_child.c), the
 * control socket (decod_ctl.c) and systemd notification (decod_notify.c).
 * Only daemons/decod/ includes this.
 */
#ifndef DECOD_DECOD_H
#define DECOD_DECOD_H

#include <stdint.h>
#include <sys/types.h>

struct conf;
struct journal;
struct buf;

enum child_state { CHILD_DOWN, CHILD_STARTING, CHILD_READY, CHILD_STOPPING, CHILD_BACKOFF };

struct child {
	char name[32];
	char path[1024];
	pid_t pid;
	enum child_state state;
	int status_fd;		/* our end of the status socket, -1 if none */
	int admin_down;		/* stopped by `decoctl stop` */
	int restart_now;	/* `decoctl restart`: no backoff after this exit */
	int removed;		/* dropped from `stages` on reload */
	unsigned restarts;	/* times started after the first */
	unsigned failures;	/* consecutive quick deaths: the backoff exponent */
	int64_t started;	/* monotonic ms */
	int64_t ready_at;
	int64_t next_start;	/* BACKOFF: when to start again */
	int64_t kill_at;	/* STOPPING: when to SIGKILL */
	char *digest;		/* settings it reads that need a restart to change */
	char *live_digest;	/* settings it reads and applies on SIGHUP */
};

struct sup {
	struct conf *cf;
	struct journal *j;
	int argc;
	char **argv;		/* flags passed on to every stage */
	struct child *children;
	size_t nchildren;
	int stopping;
	int sd_ready_sent;
};

/* decod_child.c */
void child_start(struct sup *s, struct child *c);
void child_stop(struct sup *s, struct child *c, int64_t grace_ms);
void child_reaped(struct sup *s, pid_t pid, int status);
void child_status_readable(struct sup *s, struct child *c);
void children_tick(struct sup *s);
int64_t children_next_event(struct sup *s);
const char *child_state_name(enum child_state st);
char *child_digest(struct conf *cf, const char *name, int live);
int children_all_ready(struct sup *s);

/* decod_ctl.c */
int ctl_open(struct sup *s);
int ctl_fd(void);
void ctl_handle(struct sup *s);
void ctl_close(void);

/* decod_notify.c */
void sd_notify_send(const char *msg);
int64_t sd_watchdog_interval_ms(void);

#endif

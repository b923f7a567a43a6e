/*
 * stage_ctl - the control socket of a stage that runs without the
 * supervisor (a per-stage systemd unit, a container of deploy/'s pod):
 * REP on ipc://<runtime_dir>/<stage>.ctl.ipc.  "stages" answers in the
 * supervisor's shape ({"role":"unit","stages":[{name,pid,state,...}]}) so
 * `decoctl stages` lists such stages one socket each; restart, stop and
 * start are refused with the systemctl command that does it.
 */
#ifndef DECOD_STAGE_CTL_H
#define DECOD_STAGE_CTL_H

struct stage;
struct stage_ctl;

/* stage_ctl_path - the socket's file for stage `name` in runtime_dir (caller frees) */
char *stage_ctl_path(const char *runtime_dir, const char *name);

/*
 * stage_ctl_open - listen on the stage's control socket and answer from
 * st's loop.  Returns NULL (logged; the stage runs on) when it cannot
 * listen.  stage_ctl_close(NULL) is a no-op.
 */
struct stage_ctl *stage_ctl_open(struct stage *st);
void stage_ctl_close(struct stage *st, struct stage_ctl *c);

#endif

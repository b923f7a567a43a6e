/*
 * stage_health - a stage's liveness as the kubelet's exec probes and
 * systemd see it: the loop touches <runtime_dir>/<stage>.alive every few
 * seconds, and `<stage> --health[=SECONDS]` answers from that file's age.
 * Used by the skeleton in stage.c only.
 */
#ifndef DECOD_STAGE_HEALTH_H
#define DECOD_STAGE_HEALTH_H

#include <stddef.h>

struct conf;

/* the oldest heartbeat --health accepts by default, in seconds */
#define STAGE_HEALTH_MAX_AGE_S 20

/* stage_alive_path - <runtime_dir>/<name>.alive into path */
void stage_alive_path(struct conf *cf, const char *name, char *path, size_t size);
/* stage_alive_touch - bump path's mtime, making it (with our pid) if it is gone; 0 or -1 (logged) */
int stage_alive_touch(const char *path);
/*
 * stage_health_check - the probe: 0 when name's heartbeat file is at most
 * max_age seconds old, else 1; one line on stdout either way
 */
int stage_health_check(struct conf *cf, const char *name, long max_age);

#endif

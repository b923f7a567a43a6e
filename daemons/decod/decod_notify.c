/*
 * decod_notify - systemd's readiness protocol spoken directly: one datagram
 * to $NOTIFY_SOCKET per state change, so decod needs no libsystemd.
 */
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "daemons/decod/decod.h"

/* sd_notify_send - send msg ("READY=1", "WATCHDOG=1", ...) if under systemd */
void
sd_notify_send(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	socklen_t len;
	int fd;

	if (path == NULL || (path[0] != '/' && path[0] != '@') ||
	    strlen(path) >= sizeof(sa.sun_path))
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path));
	if (path[0] == '@')
		sa.sun_path[0] = '\0';	/* abstract namespace */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return;
	(void)sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
	close(fd);
}

/* sd_watchdog_interval_ms - half of $WATCHDOG_USEC, or 0 when not asked */
int64_t
sd_watchdog_interval_ms(void)
{
	const char *usec = getenv("WATCHDOG_USEC");
	const char *pid = getenv("WATCHDOG_PID");
	long long v;

	if (usec == NULL)
		return 0;
	if (pid != NULL && atoll(pid) != (long long)getpid())
		return 0;
	v = atoll(usec);
	return v > 0 ? v / 2000 : 0;
}

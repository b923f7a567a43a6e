/*
 * curl_epoll - mirror a curl multi handle's sockets into an epoll set, so
 * a stage's loop can wait on one fd for every transfer in flight.  Shared by
 * common/kube.c, the notifier's engine and the publisher's S3 client.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>

#include "common/curl_epoll.h"
#include "common/util.h"

int
curl_epoll_socket(CURLM *multi, int epfd, curl_socket_t s, int what, void *socketp,
    void *owner)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.data.fd = s;
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(epfd, EPOLL_CTL_DEL, s, &ev);
		curl_multi_assign(multi, s, NULL);
		return 0;
	}
	if (what & CURL_POLL_IN)
		ev.events |= EPOLLIN;
	if (what & CURL_POLL_OUT)
		ev.events |= EPOLLOUT;
	if (socketp == NULL) {
		/* new to us: add, or modify if it is somehow there already */
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, s, &ev) < 0 && errno == EEXIST)
			epoll_ctl(epfd, EPOLL_CTL_MOD, s, &ev);
		curl_multi_assign(multi, s, owner);
	} else if (epoll_ctl(epfd, EPOLL_CTL_MOD, s, &ev) < 0 && errno == ENOENT) {
		epoll_ctl(epfd, EPOLL_CTL_ADD, s, &ev);
	}
	return 0;
}

void
curl_epoll_ready(CURLM *multi, int epfd)
{
	struct epoll_event evs[256];
	int n, running;

	do {
		n = epoll_wait(epfd, evs, 256, 0);
		for (int i = 0; i < n; i++) {
			int mask = 0;

			if (evs[i].events & (EPOLLIN | EPOLLHUP))
				mask |= CURL_CSELECT_IN;	/* a hang-up is read as EOF */
			if (evs[i].events & EPOLLOUT)
				mask |= CURL_CSELECT_OUT;
			if (evs[i].events & (EPOLLERR | EPOLLHUP))
				mask |= CURL_CSELECT_ERR;
			curl_multi_socket_action(multi, evs[i].data.fd, mask, &running);
		}
	} while (n == 256);
}

void
curl_epoll_timeout(CURLM *multi, int64_t *due)
{
	int running;

	if (*due >= 0 && now_ms() >= *due) {
		*due = -1;
		curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
	}
}

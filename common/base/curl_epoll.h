/*
 * curl_epoll - the one piece every curl multi handle driven from an epoll
 * set needs: mirroring curl's socket requests (CURLMOPT_SOCKETFUNCTION)
 * into that set, and feeding curl the sockets that are ready.  The Kubernetes client, the notifier's engine and the S3
 * client each own a multi handle and an epoll fd and call this.
 */
#ifndef DECOD_CURL_EPOLL_H
#define DECOD_CURL_EPOLL_H

#include <stdint.h>

#include <curl/curl.h>

/*
 * curl_epoll_socket - apply curl's request `what` for socket s (as given to
 * a CURLMOPT_SOCKETFUNCTION callback, with its socketp) to epoll set epfd:
 * add, modify or remove; owner is recorded with curl_multi_assign so the
 * next call for s knows it is already in the set.  Always returns 0, as
 * curl expects of the callback.
 */
int curl_epoll_socket(CURLM *multi, int epfd, curl_socket_t s, int what, void *socketp,
    void *owner);

/*
 * curl_epoll_ready - hand every socket of epfd that is ready now to
 * curl_multi_socket_action (no wait): readable, writable, error or hang-up.
 */
void curl_epoll_ready(CURLM *multi, int epfd);

/*
 * curl_epoll_timeout - if curl's timer (*due, monotonic ms from
 * CURLMOPT_TIMERFUNCTION; -1 none) is due, clear it and run curl's timeout
 * action.  Completed transfers are then read with curl_multi_info_read.
 */
void curl_epoll_timeout(CURLM *multi, int64_t *due);

#endif

/*
 * bench_webhook - load for the admission webhook: C clients, each one
 * keep-alive HTTPS connection (libcurl multi, one easy handle per client),
 * POST the same AdmissionReview back to back (closed loop) or at a fixed
 * rate per client (open loop), and report throughput, latency percentiles
 * and errors (a non-200 answer, a transport error, or no patch in it).
 *
 *   bench_webhook URL CAFILE BODYFILE [-c CLIENTS] [-n REQUESTS] [-r RATE]
 *   RATE: requests per second per client (0: as fast as the server answers)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "common/util.h"

struct client {
	CURL *h;
	struct buf resp;
	int64_t started_us;	/* 0: idle */
	int64_t due_us;		/* next start (open loop) */
};

static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static size_t
on_data(char *p, size_t sz, size_t n, void *arg)
{
	buf_add(arg, p, sz * n);
	return sz * n;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	int nclients = 200, errors = 0, inflight = 0;
	long total = 10000, started = 0, done = 0;
	double rate = 0;
	char *body;
	size_t blen;
	struct client *cs;
	struct curl_slist *hdrs = NULL;
	int64_t *lat, t0, t1, interval_us;
	CURLM *m;

	if (argc < 4) {
		fprintf(stderr, "usage: bench_webhook URL CAFILE BODYFILE [-c CLIENTS] "
		    "[-n REQUESTS] [-r RATE_PER_CLIENT]\n");
		return 2;
	}
	for (int i = 4; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "-c") == 0)
			nclients = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "-n") == 0)
			total = atol(argv[i + 1]);
		else if (strcmp(argv[i], "-r") == 0)
			rate = atof(argv[i + 1]);
	}
	if ((body = read_file(argv[3], &blen, 0)) == NULL) {
		perror(argv[3]);
		return 1;
	}
	interval_us = rate > 0 ? (int64_t)(1e6 / rate) : 0;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	m = curl_multi_init();
	curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, (long)nclients + 16);
	hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	hdrs = curl_slist_append(hdrs, "Expect:");
	cs = xcalloc((size_t)nclients, sizeof(*cs));
	lat = xcalloc((size_t)total, sizeof(*lat));
	for (int i = 0; i < nclients; i++) {
		struct client *c = &cs[i];

		c->h = curl_easy_init();
		buf_init(&c->resp);
		curl_easy_setopt(c->h, CURLOPT_URL, argv[1]);
		curl_easy_setopt(c->h, CURLOPT_CAINFO, argv[2]);
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE, (long)blen);
		curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_data);
		curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &c->resp);
		curl_easy_setopt(c->h, CURLOPT_PRIVATE, c);
		curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, 10000L);
	}
	/*
	 * warm-up, not counted: one request per client opens its keep-alive
	 * connection, so the figures are of requests, not of TLS handshakes
	 */
	for (int i = 0; i < nclients; i++)
		curl_multi_add_handle(m, cs[i].h);
	for (int running = 1; running > 0;) {
		curl_multi_perform(m, &running);
		if (running > 0)
			curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	for (int i = 0; i < nclients; i++)
		curl_multi_remove_handle(m, cs[i].h);
	t0 = now_us();
	for (int i = 0; i < nclients; i++) {
		/* spread the clients' first requests over one interval */
		cs[i].due_us = t0 + (interval_us > 0 ? interval_us * i / nclients : 0);
	}
	while (done < total) {
		int64_t now = now_us(), wait_us = 10000;
		CURLMsg *msg;
		int left, running;

		for (int i = 0; i < nclients && started < total; i++) {
			struct client *c = &cs[i];

			if (c->started_us != 0)
				continue;
			if (c->due_us > now) {
				if (c->due_us - now < wait_us)
					wait_us = c->due_us - now;
				continue;
			}
			buf_reset(&c->resp);
			c->started_us = now;
			curl_multi_add_handle(m, c->h);
			started++;
			inflight++;
		}
		curl_multi_perform(m, &running);
		while ((msg = curl_multi_info_read(m, &left)) != NULL) {
			struct client *c;
			long code = 0;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
			curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
			if (msg->data.result != CURLE_OK || code != 200 || c->resp.data == NULL ||
			    strstr(c->resp.data, "\"patch\"") == NULL) {
				if (errors < 5)
					fprintf(stderr, "error: %s, HTTP %ld\n",
					    curl_easy_strerror(msg->data.result), code);
				errors++;
			}
			now = now_us();
			lat[done++] = now - c->started_us;
			curl_multi_remove_handle(m, c->h);
			c->due_us = interval_us > 0 ? c->started_us + interval_us : now;
			c->started_us = 0;
			inflight--;
		}
		if (done < total)
			curl_multi_poll(m, NULL, 0, wait_us / 1000 > 0 ? (int)(wait_us / 1000) : 1,
			    NULL);
	}
	t1 = now_us();
	qsort(lat, (size_t)total, sizeof(*lat), cmp_i64);
	printf("clients=%d requests=%ld errors=%d seconds=%.2f rps=%.0f "
	    "p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f\n", nclients, total, errors,
	    (double)(t1 - t0) / 1e6, (double)total * 1e6 / (double)(t1 - t0),
	    lat[total / 2] / 1000.0, lat[total * 9 / 10] / 1000.0,
	    lat[total * 99 / 100] / 1000.0, lat[total - 1] / 1000.0);
	for (int i = 0; i < nclients; i++) {
		curl_easy_cleanup(cs[i].h);
		buf_free(&cs[i].resp);
	}
	curl_multi_cleanup(m);
	curl_slist_free_all(hdrs);
	curl_global_cleanup();
	free(cs);
	free(lat);
	free(body);
	return errors > 0;
}

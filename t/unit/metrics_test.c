/*
 * metrics_test - the registry in Prometheus text format: HELP and TYPE
 * lines, unlabelled and labelled series, counters adding up, gauges set,
 * whole numbers printed without a fraction, and values read back;
 * histogram buckets (cumulative, le on the bound, +Inf, sum and count);
 * label values escaped (", \, newline); the series bound; concurrent
 * updates from several threads while another renders; and the registry
 * served over HTTP on a bound address, a taken one refused with its reason.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include "common/metrics.h"
#include "common/util.h"
#include "t/tap.h"

#define THREADS 4
#define ROUNDS 20000

static struct metrics *shared;
static int rendering = 1;	/* atomic */

static void *
bump(void *arg)
{
	char labels[64];

	snprintf(labels, sizeof(labels), "t=\"%d\"", (int)(long)arg % 2);
	for (int i = 0; i < ROUNDS; i++) {
		metrics_add(shared, "c_total", labels, 1);
		metrics_observe(shared, "h_seconds", NULL, (i % 3) * 0.5);
	}
	return NULL;
}

static long renders;	/* renders done by render_loop (atomic) */

static void *
render_loop(void *arg)
{
	(void)arg;
	while (__atomic_load_n(&rendering, __ATOMIC_SEQ_CST)) {
		free(metrics_render(shared, NULL));
		__atomic_add_fetch(&renders, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

/* collect - a collect hook as metrics_series.c's: define and change, outside the lock */
static void
collect(struct metrics *m, void *arg)
{
	(void)arg;
	metrics_define(m, "collects_total", METRIC_COUNTER, "collect hooks run");
	metrics_add(m, "collects_total", NULL, 1);
}

static size_t
on_body(char *d, size_t sz, size_t n, void *arg)
{
	buf_add(arg, d, sz * n);
	return sz * n;
}

/* get - GET url into b; the HTTP status, or -1 */
static long
get(const char *url, struct buf *b)
{
	CURL *h = curl_easy_init();
	long status = -1;

	buf_reset(b);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	buf_addc(b, '\0');
	return status;
}

static void
histograms_and_labels(void)
{
	static const double bounds[] = { 0.1, 1, 10 };
	struct metrics *m = metrics_new();
	char labels[256], small[16], *text;

	metrics_define_histogram(m, "d_seconds", "how long", bounds, 3);
	text = metrics_render(m, NULL);
	is_str(text, "# HELP d_seconds how long\n# TYPE d_seconds histogram\n",
	    "a histogram nothing was observed in has no series yet");
	free(text);
	metrics_observe(m, "d_seconds", "step=\"x\"", 0.05);
	metrics_observe(m, "d_seconds", "step=\"x\"", 1);	/* on the bound: le="1" */
	metrics_observe(m, "d_seconds", "step=\"x\"", 5);
	metrics_observe(m, "d_seconds", "step=\"x\"", 100);
	metrics_observe(m, "d_seconds", NULL, 0.5);
	text = metrics_render(m, NULL);
	is_str(text, "# HELP d_seconds how long\n# TYPE d_seconds histogram\n"
	    "d_seconds_bucket{step=\"x\",le=\"0.1\"} 1\n"
	    "d_seconds_bucket{step=\"x\",le=\"1\"} 2\n"
	    "d_seconds_bucket{step=\"x\",le=\"10\"} 3\n"
	    "d_seconds_bucket{step=\"x\",le=\"+Inf\"} 4\n"
	    "d_seconds_sum{step=\"x\"} 106.05\n"
	    "d_seconds_count{step=\"x\"} 4\n"
	    "d_seconds_bucket{le=\"0.1\"} 0\n"
	    "d_seconds_bucket{le=\"1\"} 1\n"
	    "d_seconds_bucket{le=\"10\"} 1\n"
	    "d_seconds_bucket{le=\"+Inf\"} 1\n"
	    "d_seconds_sum 0.5\n"
	    "d_seconds_count 1\n",
	    "buckets cumulative, a value on a bound in it, +Inf, sum and count");
	free(text);
	is_int((long long)metrics_value(m, "d_seconds", "step=\"x\""), 4,
	    "a histogram's value is its count");

	is_str(metrics_labels(labels, sizeof(labels), "name", "a\"b\\c\nd", "ns", "x", NULL),
	    "name=\"a\\\"b\\\\c\\nd\",ns=\"x\"", "label values escape \", \\ and newline");
	ok(metrics_labels(small, sizeof(small), "name", "0123456789abcdef", NULL) == NULL &&
	    small[0] == '\0', "a label set that does not fit is refused, not cut");
	metrics_define(m, "r", METRIC_GAUGE, "help with \\ and\na newline");
	metrics_set(m, "r", labels, 1);
	metrics_set(m, "r", "k=\"2\"", 2);
	text = metrics_render(m, NULL);
	ok(strstr(text, "# HELP r help with \\\\ and\\na newline\n") != NULL,
	    "HELP escapes \\ and newline");
	ok(strstr(text, "r{name=\"a\\\"b\\\\c\\nd\",ns=\"x\"} 1\n") != NULL,
	    "the escaped series is rendered as given");
	free(text);
	metrics_remove(m, "r", labels);
	metrics_remove(m, "r", "k=\"absent\"");
	text = metrics_render(m, NULL);
	ok(strstr(text, "name=") == NULL && strstr(text, "r{k=\"2\"} 2\n") != NULL,
	    "a removed series is gone, the others stay");
	free(text);

	metrics_set_max_series(m, 3);
	for (int i = 0; i < 5; i++) {
		char l[32];

		snprintf(l, sizeof(l), "i=\"%d\"", i);
		metrics_add(m, "r", l, 1);
	}
	is_int((long long)metrics_value(m, "r", "i=\"1\""), 1, "series up to the bound are kept");
	is_int((long long)metrics_value(m, "r", "i=\"4\""), 0, "series past the bound are dropped");
	metrics_free(m);
}

static void
concurrent(void)
{
	pthread_t t[THREADS], r[2];
	char *text;

	shared = metrics_new();
	metrics_define(shared, "c_total", METRIC_COUNTER, "bumped");
	metrics_define(shared, "h_seconds", METRIC_HISTOGRAM, "observed");
	metrics_set_collect(shared, collect, NULL);
	/* two serving threads at once (the supervisor's, a stage's): each runs the hook */
	for (int i = 0; i < 2; i++)
		pthread_create(&r[i], NULL, render_loop, NULL);
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, bump, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	__atomic_store_n(&rendering, 0, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	is_int((long long)metrics_value(shared, "collects_total", NULL),
	    __atomic_load_n(&renders, __ATOMIC_SEQ_CST),
	    "the collect hook ran once per render, from two threads at once");
	metrics_set_collect(shared, NULL, NULL);
	is_int((long long)metrics_value(shared, "c_total", "t=\"0\""), THREADS / 2 * ROUNDS,
	    "concurrent adds: none lost (even threads)");
	is_int((long long)metrics_value(shared, "c_total", "t=\"1\""), THREADS / 2 * ROUNDS,
	    "concurrent adds: none lost (odd threads)");
	is_int((long long)metrics_value(shared, "h_seconds", NULL), THREADS * ROUNDS,
	    "concurrent observations: none lost");
	text = metrics_render(shared, NULL);
	ok(strstr(text, "h_seconds_bucket{le=\"0.5\"} 53336\n") != NULL,
	    "... and each in its bucket (0 and 0.5 of every 3: 2/3 of 80000)");
	free(text);
	metrics_free(shared);
}

static void
served(void)
{
	struct metrics *m = metrics_new(), *m2 = metrics_new();
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	char addr[64], err[256], url[128];
	struct buf b;
	int fd;

	/* a free port: bind 0, read it, let it go */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	getsockname(fd, (struct sockaddr *)&sa, &sl);
	close(fd);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(sa.sin_port));
	metrics_define(m, "x_total", METRIC_COUNTER, "things done");
	metrics_add(m, "x_total", NULL, 7);
	is_int(metrics_serve_addr(m, addr, err, sizeof(err)), 0, "served on %s", addr);
	buf_init(&b);
	snprintf(url, sizeof(url), "http://%s/metrics", addr);
	is_int(get(url, &b), 200, "GET /metrics is 200");
	is_str(b.data, "# HELP x_total things done\n# TYPE x_total counter\nx_total 7\n",
	    "... with the exposition");
	snprintf(url, sizeof(url), "http://%s/nope", addr);
	is_int(get(url, &b), 404, "another path is 404");
	is_int(metrics_serve_addr(m2, addr, err, sizeof(err)), -1, "a taken address is refused");
	ok(strstr(err, "cannot listen on") != NULL && strstr(err, "in use") != NULL,
	    "... saying why: %s", err);
	is_int(metrics_serve_addr(m2, "nohost.invalid:x", err, sizeof(err)), -1,
	    "a bad address is refused");
	buf_free(&b);
	metrics_free(m);
	metrics_free(m2);
}

/*
 * many_series - a site per label set: thousands of series, found again
 * after growth and after removals in the middle (the index is rebuilt)
 */
static void
many_series(void)
{
	struct metrics *m = metrics_new();
	char l[64], *text;
	int bad = 0;

	metrics_set_max_series(m, 20000);
	metrics_define(m, "s", METRIC_GAUGE, "per site");
	for (int i = 0; i < 10000; i++) {
		snprintf(l, sizeof(l), "name=\"site-%d\"", i);
		metrics_set(m, "s", l, i);
	}
	metrics_set(m, "s", NULL, -1);
	for (int i = 0; i < 10000; i += 3) {
		snprintf(l, sizeof(l), "name=\"site-%d\"", i);
		metrics_remove(m, "s", l);
	}
	for (int i = 0; i < 10000; i++) {
		snprintf(l, sizeof(l), "name=\"site-%d\"", i);
		metrics_add(m, "s", l, 0.5);
		if (metrics_value(m, "s", l) != (i % 3 == 0 ? 0.5 : i + 0.5))
			bad++;
	}
	is_int(bad, 0, "10,000 label sets: each found again after a third were removed");
	ok(metrics_value(m, "s", NULL) == -1, "the unlabelled series beside them");
	text = metrics_render(m, NULL);
	ok(strstr(text, "s{name=\"site-1\"} 1.5\ns{name=\"site-2\"} 2.5\ns{name=\"site-4\"}")
	    != NULL && strstr(text, "s{name=\"site-9998\"} 9998.5\ns -1\ns{name=\"site-0\"} "
	    "0.5\n") != NULL,
	    "series keep the order they first appeared in; a removed one comes back last");
	free(text);
	metrics_free(m);
}

int
main(void)
{
	struct metrics *m = metrics_new();
	char *text;
	size_t len;

	metrics_define(m, "x_total", METRIC_COUNTER, "things done");
	metrics_define(m, "y", METRIC_GAUGE, "things now");
	metrics_define(m, "e_total", METRIC_COUNTER, "errors");
	metrics_define(m, "x_total", METRIC_GAUGE, "defined twice");
	text = metrics_render(m, &len);
	is_str(text, "# HELP x_total things done\n# TYPE x_total counter\nx_total 0\n"
	    "# HELP y things now\n# TYPE y gauge\ny 0\n"
	    "# HELP e_total errors\n# TYPE e_total counter\ne_total 0\n",
	    "families listed with zero before anything happened; a second define is a no-op");
	is_int((long long)len, (long long)strlen(text), "length");
	free(text);
	metrics_add(m, "x_total", NULL, 1);
	metrics_add(m, "x_total", NULL, 2);
	metrics_set(m, "y", NULL, 7);
	metrics_set(m, "y", NULL, 5);
	metrics_add(m, "e_total", "operation=\"upsert\"", 1);
	metrics_add(m, "e_total", "operation=\"delete\"", 2);
	metrics_add(m, "e_total", "operation=\"upsert\"", 1);
	metrics_set(m, "y", NULL, 0.5);
	text = metrics_render(m, NULL);
	is_str(text, "# HELP x_total things done\n# TYPE x_total counter\nx_total 3\n"
	    "# HELP y things now\n# TYPE y gauge\ny 0.5\n"
	    "# HELP e_total errors\n# TYPE e_total counter\n"
	    "e_total{operation=\"upsert\"} 2\ne_total{operation=\"delete\"} 2\n",
	    "counters add, gauges set, labelled series each on a line");
	free(text);
	ok(metrics_value(m, "x_total", NULL) == 3, "value read back");
	ok(metrics_value(m, "e_total", "operation=\"delete\"") == 2, "labelled value read back");
	ok(metrics_value(m, "e_total", "operation=\"check\"") == 0, "unknown series is 0");
	ok(metrics_value(m, "nope", NULL) == 0, "unknown family is 0");
	metrics_free(m);
	metrics_free(NULL);
	ok(1, "freed; NULL is a no-op");
	histograms_and_labels();
	many_series();
	concurrent();
	curl_global_init(CURL_GLOBAL_ALL);
	served();
	curl_global_cleanup();
	return done_testing();
}

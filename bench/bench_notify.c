/*
 * bench_notify - time the notify engine on N replicas: the URLs are
 * BASE/r/0 .. BASE/r/N-1 (bench/replica.c answers them all), or one URL a
 * line from --urls FILE.  Prints one line of key=value figures; the
 * comparison with curl's own parallel mode and with xargs + curl is in
 * bench/bench_notify.sh.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "daemons/notifier/notify_engine.h"

static void
usage(void)
{
	fprintf(stderr, "usage: bench_notify (--base URL --count N | --urls FILE)\n"
	    "    (--hosts: --base is a port, replica i is http://127.0.X.Y:PORT/r/i)\n"
	    "    [--concurrency C] [--body-size BYTES] [--style push|poll] [--runs R]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "base", required_argument, NULL, 'b' },
		{ "count", required_argument, NULL, 'n' },
		{ "urls", required_argument, NULL, 'u' },
		{ "concurrency", required_argument, NULL, 'c' },
		{ "body-size", required_argument, NULL, 's' },
		{ "style", required_argument, NULL, 'S' },
		{ "runs", required_argument, NULL, 'r' },
		{ "hosts", no_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 },
	};
	const char *base = NULL, *urls = NULL;
	long count = 0, body_size = 2048, runs = 1;
	int hosts = 0;
	struct notify_params p;
	struct notify_target *t;
	struct notify_engine *e;
	enum notify_style style = NOTIFY_PUSH;
	char **url;
	struct buf body;
	int c;

	notify_params_default(&p);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'b': base = optarg; break;
		case 'n': count = atol(optarg); break;
		case 'u': urls = optarg; break;
		case 'c': p.concurrency = atoi(optarg); break;
		case 's': body_size = atol(optarg); break;
		case 'S': style = strcmp(optarg, "poll") == 0 ? NOTIFY_POLL : NOTIFY_PUSH; break;
		case 'r': runs = atol(optarg); break;
		case 'H': hosts = 1; break;
		default: usage();
		}
	}
	if ((base == NULL) == (urls == NULL) || (base != NULL && count <= 0) || runs < 1)
		usage();
	if (urls != NULL) {
		char *text = read_file(urls, NULL, 0), *line, *save = NULL;

		if (text == NULL) {
			perror(urls);
			return 1;
		}
		url = NULL;
		count = 0;
		for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			url = xrealloc(url, (size_t)(count + 1) * sizeof(*url));
			url[count++] = xstrdup(line);
		}
		free(text);
	} else {
		url = xcalloc((size_t)count, sizeof(*url));
		for (long i = 0; i < count; i++) {
			if (hosts)	/* base is a port: one loopback host per replica */
				url[i] = xasprintf("http://127.0.%ld.%ld:%s/r/%ld",
				    (i / 250) % 250, i % 250 + 1, base, i);
			else
				url[i] = xasprintf("%s/r/%ld", base, i);
		}
	}
	t = xcalloc((size_t)count, sizeof(*t));
	for (long i = 0; i < count; i++) {
		t[i].id = url[i];
		t[i].url = url[i];
		t[i].style = style;
	}

	/* a push body of about body_size bytes */
	buf_init(&body);
	buf_adds(&body, "{\"decofile\":{\"Page\":{\"html\":\"");
	while ((long)body.len < body_size - 60)
		buf_addc(&body, 'x');
	buf_adds(&body, "\"}},\"source\":\"operator\",\"timestamp\":\"1731598481\"}");

	if ((e = notify_engine_new()) == NULL) {
		perror("notify_engine_new");
		return 1;
	}
	for (long r = 0; r < runs; r++) {
		struct notify_summary s;
		struct notify_job *job;
		int64_t t0 = now_ms(), ms;

		job = notify_job_start(e, t, (size_t)count, body.data, body.len, 1,
		    &p, NULL, NULL, NULL);
		if (notify_engine_run(e, 600000) < 0) {
			fprintf(stderr, "bench_notify: did not finish\n");
			return 1;
		}
		ms = now_ms() - t0;
		notify_job_summary(job, &s);
		printf("engine replicas=%ld concurrency=%d body=%zu confirmed=%zu failed=%zu "
		    "ms=%lld\n", count, p.concurrency, body.len, s.confirmed, s.failed,
		    (long long)ms);
		if (s.failed > 0) {
			char *f = notify_job_failures(job, 3);

			fprintf(stderr, "bench_notify: failures: %s\n", f);
			free(f);
		}
		notify_job_free(job);
	}
	notify_engine_free(e);
	for (long i = 0; i < count; i++)
		free(url[i]);
	free(url);
	free(t);
	buf_free(&body);
	return 0;
}

/*
 * notify_engine_test - the notify engine against real decod-site replicas:
 * push confirmed, 401 with and without a token, 400, a hanging replica
 * timing out, a refused one failing after its retries, one that vanished
 * (not a failure), one whose address changed, poll style, the
 * concurrency limit, and cancelling a job in flight.
 */
#include "config.h"

#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include "common/util.h"
#include "daemons/notifier/notify_engine.h"
#include "t/tap.h"

static char tmpdir[256];
static pid_t pids[16];
static int npids;

/* spawn_site - start decod-site with args; returns its port (0: failed) */
static int
spawn_site(const char *token, ...)
{
	const char *top = getenv("top_builddir");
	char path[1024], line[256];
	const char *argv[16];
	int fds[2], argc = 0, port = 0;
	va_list ap;
	pid_t pid;
	FILE *f;

	snprintf(path, sizeof(path), "%s/examples/site/decod-site", top ? top : ".");
	argv[argc++] = path;
	argv[argc++] = "--port";
	argv[argc++] = "0";
	/* a replica without a token accepts any call (decod-site is strict by default) */
	if (token == NULL)
		argv[argc++] = "--lenient";
	va_start(ap, token);
	while (argc < 15 && (argv[argc] = va_arg(ap, const char *)) != NULL)
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	if (pipe(fds) < 0)
		return 0;
	if ((pid = fork()) == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		if (freopen("/dev/null", "w", stderr) == NULL)
			_exit(127);
		if (token != NULL)
			setenv("DECO_RELEASE_RELOAD_TOKEN", token, 1);
		else
			unsetenv("DECO_RELEASE_RELOAD_TOKEN");
		execv(path, (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	pids[npids++] = pid;
	f = fdopen(fds[0], "r");
	if (fgets(line, sizeof(line), f) != NULL)
		sscanf(line, "listening on %d", &port);
	fclose(f);
	return port;
}

/* refused_port - a port nothing listens on */
static int
refused_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int s = socket(AF_INET, SOCK_STREAM, 0), port;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bind(s, (struct sockaddr *)&sa, sizeof(sa));
	getsockname(s, (struct sockaddr *)&sa, &sl);
	port = ntohs(sa.sin_port);
	close(s);
	return port;
}

static size_t
collect(char *p, size_t sz, size_t n, void *arg)
{
	buf_add(arg, p, sz * n);
	return sz * n;
}

/* get - body of a GET (blocking; test only) */
static char *
get(const char *url)
{
	CURL *c = curl_easy_init();
	struct buf b;

	buf_init(&b);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
	curl_easy_perform(c);
	curl_easy_cleanup(c);
	return buf_steal(&b, NULL);
}

static int done_calls;

static void
on_done(void *arg, struct notify_job *job)
{
	done_calls++;
}

/* resolve: "gone" went away; "moved" now lives at the URL in arg */
static int
resolve(void *arg, struct notify_target *t)
{
	if (strcmp(t->id, "gone") == 0)
		return 0;
	if (strcmp(t->id, "moved") == 0) {
		t->url = arg;
		return 1;
	}
	return -1;
}

static const char body[] =
    "{\"decofile\":{\"Header\":{\"title\":\"hello\"}},\"source\":\"operator\","
    "\"timestamp\":\"1731598481\"}";

/* run1 - notify one replica and wait */
static struct notify_job *
run1(struct notify_engine *e, const struct notify_target *t, const char *b,
    const struct notify_params *p)
{
	struct notify_job *job;

	done_calls = 0;
	job = notify_job_start(e, t, 1, b, strlen(b), 1731598481, p, resolve, on_done, NULL);
	notify_engine_run(e, 20000);
	return job;
}

int
main(void)
{
	struct notify_engine *e;
	struct notify_params fast;
	struct notify_job *job;
	const struct notify_result *r;
	struct notify_summary s;
	char ua[64], uh[64], uf[64], us[64], up[64], ur[64], tsfile[512], *text;
	int pa, ph, pf, ps, pp;
	int64_t t0;

	snprintf(tmpdir, sizeof(tmpdir), "%s/notify-engine-XXXXXX",
	    getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(tmpdir) == NULL) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	snprintf(tsfile, sizeof(tsfile), "%s/timestamp.txt", tmpdir);
	write_file_atomic(tsfile, "100", 3, 0644);
	signal(SIGPIPE, SIG_IGN);

	pa = spawn_site("tok", (char *)NULL);
	ph = spawn_site(NULL, "--hang", (char *)NULL);
	pf = spawn_site(NULL, "--fail", (char *)NULL);
	ps = spawn_site(NULL, "--delay", "200", (char *)NULL);
	pp = spawn_site(NULL, "--ts-file", tsfile, (char *)NULL);
	if (!pa || !ph || !pf || !ps || !pp) {
		printf("Bail out! decod-site did not start (top_builddir set?)\n");
		return 1;
	}
	snprintf(ua, sizeof(ua), "http://127.0.0.1:%d", pa);
	snprintf(uh, sizeof(uh), "http://127.0.0.1:%d", ph);
	snprintf(uf, sizeof(uf), "http://127.0.0.1:%d/", pf);
	snprintf(us, sizeof(us), "http://127.0.0.1:%d", ps);
	snprintf(up, sizeof(up), "http://127.0.0.1:%d", pp);
	snprintf(ur, sizeof(ur), "http://127.0.0.1:%d", refused_port());

	e = notify_engine_new();
	ok(e != NULL, "engine created");
	notify_params_default(&fast);
	fast.backoff_ms = 50;
	fast.attempt_timeout_ms = 2000;

	/* push, right token */
	{
		struct notify_target t = { "a", ua, NOTIFY_PUSH, NULL, "tok" };

		job = run1(e, &t, body, &fast);
		r = notify_job_result(job, 0);
		is_int(done_calls, 1, "done called once");
		is_int(r->state, NOTIFY_CONFIRMED, "push with the token is confirmed");
		is_int(r->http_status, 200, "status 200");
		is_int(r->attempts, 1, "one attempt");
		is_str(r->error, "", "no error");
		notify_job_free(job);
		char *u = xasprintf("%s/.decofile", ua);

		text = get(u);
		free(u);
		ok(strstr(text, "\"decofile\":{\"Header\":{\"title\":\"hello\"}}") != NULL,
		    "the replica serves the pushed document");
		free(text);
	}
	/* 401 without a token, 401 with a wrong one, 400 */
	{
		struct notify_target t = { "a", ua, NOTIFY_PUSH, NULL, NULL };

		job = run1(e, &t, body, &fast);
		r = notify_job_result(job, 0);
		is_int(r->state, NOTIFY_MISSING_TOKEN, "401 without a token: missing token");
		is_int(r->http_status, 401, "status 401");
		is_int(r->attempts, 1, "not retried");
		notify_job_free(job);

		t.token = "wrong";
		job = run1(e, &t, body, &fast);
		r = notify_job_result(job, 0);
		is_int(r->state, NOTIFY_FAILED, "401 with a wrong token fails");
		ok(strstr(r->error, "401") != NULL, "error names the 401: %s", r->error);
		is_int(r->attempts, 1, "not retried");
		notify_job_free(job);

		t.token = "tok";
		job = run1(e, &t, "{\"source\":\"operator\"}", &fast);
		r = notify_job_result(job, 0);
		is_int(r->state, NOTIFY_FAILED, "no decofile in the body fails");
		is_int(r->http_status, 400, "status 400");
		ok(strstr(r->error, "HTTP 400") != NULL, "error says HTTP 400: %s", r->error);
		notify_job_free(job);
	}
	/* a hanging replica times out, each attempt */
	{
		struct notify_target t = { "h", uh, NOTIFY_PUSH, NULL, NULL };
		struct notify_params p = fast;

		p.attempt_timeout_ms = 300;
		p.attempts = 2;
		t0 = now_ms();
		job = run1(e, &t, body, &p);
		r = notify_job_result(job, 0);
		is_int(r->state, NOTIFY_FAILED, "hanging replica fails");
		is_int(r->attempts, 2, "after two attempts");
		ok(strstr(r->error, "imeout") != NULL || strstr(r->error, "timed out") != NULL,
		    "error says timeout: %s", r->error);
		ok(now_ms() - t0 >= 600, "each attempt waited its timeout");
		notify_job_free(job);
	}
	/* refused, and 500: retried, then failed */
	{
		struct notify_target t = { "r", ur, NOTIFY_PUSH, NULL, NULL };

		job = run1(e, &t, body, &fast);
		r = notify_job_result(job, 0);
		is_int(r->state, NOTIFY_FAILED, "refused replica fails");
		is_int(r->attempts, 3, "after three attempts");
		ok(strstr(r->error, "onnect") != NULL, "error says connect: %s", r->error);
		notify_job_free(job);

		t.url = uf;
		job = run1(e, &t, body, &fast);
		r = notify_job_result(job, 0);
		is_int(r->state, NOTIFY_FAILED, "500 fails");
		is_int(r->attempts, 3, "after three attempts");
		is_int(r->http_status, 500, "status 500");
		notify_job_free(job);
	}
	/* backoff doubles: 3 attempts with 100 ms wait 100 + 200 ms */
	{
		struct notify_target t = { "r", ur, NOTIFY_PUSH, NULL, NULL };
		struct notify_params p = fast;

		p.backoff_ms = 100;
		t0 = now_ms();
		job = run1(e, &t, body, &p);
		ok(now_ms() - t0 >= 300, "backoff 100 ms then 200 ms");
		notify_job_free(job);
	}
	/* gone and moved (re-resolve before each try) */
	{
		struct notify_target t[3] = {
			{ "gone", ur, NOTIFY_PUSH, NULL, NULL },
			{ "moved", ur, NOTIFY_PUSH, NULL, "tok" },
			{ "a", ua, NOTIFY_PUSH, NULL, "tok" },
		};

		done_calls = 0;
		job = notify_job_start(e, t, 3, body, strlen(body), 1, &fast, resolve,
		    on_done, ua);
		notify_engine_run(e, 20000);
		notify_job_summary(job, &s);
		is_int(notify_job_result(job, 0)->state, NOTIFY_GONE, "vanished replica is gone");
		is_int(notify_job_result(job, 0)->attempts, 0, "and was never called");
		is_int(notify_job_result(job, 1)->state, NOTIFY_CONFIRMED,
		    "moved replica confirmed at its new address");
		is_str(notify_job_target(job, 1)->url, ua, "target shows the new URL");
		is_int((long long)s.confirmed, 2, "summary: 2 confirmed");
		is_int((long long)s.failed, 0, "summary: gone is not a failure");
		is_int((long long)s.gone, 1, "summary: 1 gone");
		notify_job_free(job);
	}
	/* poll style: answered once the timestamp file is new enough */
	{
		struct notify_target t = { "p", up, NOTIFY_POLL, tsfile, NULL };

		done_calls = 0;
		job = notify_job_start(e, &t, 1, NULL, 0, 200, &fast, NULL, on_done, NULL);
		notify_engine_run(e, 300);
		is_int(done_calls, 0, "poll waits while the timestamp is old");
		write_file_atomic(tsfile, "200", 3, 0644);
		notify_engine_run(e, 20000);
		r = notify_job_result(job, 0);
		is_int(done_calls, 1, "poll finished");
		is_int(r->state, NOTIFY_CONFIRMED, "poll confirmed");
		is_int(r->attempts, 1, "in one long poll");
		notify_job_free(job);

		/* poll_timeout bounds a replica's waiting */
		fast.poll_timeout_ms = 400;
		job = notify_job_start(e, &t, 1, NULL, 0, 999, &fast, NULL, NULL, NULL);
		t0 = now_ms();
		notify_engine_run(e, 20000);
		r = notify_job_result(job, 0);
		is_int(r->state, NOTIFY_FAILED, "poll past its time fails");
		ok(now_ms() - t0 < 5000, "within the poll timeout");
		notify_job_free(job);
		fast.poll_timeout_ms = 150000;
	}
	/* concurrency limit: 10 calls of 200 ms, 5 at once: >= 400 ms */
	{
		struct notify_target t[10];
		struct notify_params p = fast;
		char ids[10][8];

		for (int i = 0; i < 10; i++) {
			snprintf(ids[i], sizeof(ids[i]), "s%d", i);
			t[i] = (struct notify_target){ ids[i], us, NOTIFY_PUSH, NULL, NULL };
		}
		p.concurrency = 5;
		t0 = now_ms();
		job = notify_job_start(e, t, 10, body, strlen(body), 1, &p, NULL, NULL, NULL);
		notify_engine_run(e, 20000);
		notify_job_summary(job, &s);
		is_int((long long)s.confirmed, 10, "all 10 confirmed");
		ok(now_ms() - t0 >= 400, "5 at once: two rounds of 200 ms");
		notify_job_free(job);
	}
	/* a mixed rollout: the failure text names the failing replicas */
	{
		struct notify_target t[3] = {
			{ "good", ua, NOTIFY_PUSH, NULL, "tok" },
			{ "bad", uf, NOTIFY_PUSH, NULL, NULL },
			{ "down", ur, NOTIFY_PUSH, NULL, NULL },
		};

		job = notify_job_start(e, t, 3, body, strlen(body), 1, &fast, NULL, NULL, NULL);
		notify_engine_run(e, 20000);
		text = notify_job_failures(job, 10);
		ok(strstr(text, "bad (HTTP 500") != NULL && strstr(text, "down (") != NULL &&
		    strstr(text, "good") == NULL, "failures name bad and down: %s", text);
		free(text);
		text = notify_job_failures(job, 1);
		ok(strstr(text, "and 1 more") != NULL, "long lists are cut: %s", text);
		free(text);
		notify_job_free(job);
	}
	/* cancel in flight; a job of nobody finishes at once */
	{
		struct notify_target t = { "h", uh, NOTIFY_PUSH, NULL, NULL };

		done_calls = 0;
		job = notify_job_start(e, &t, 1, body, strlen(body), 1, NULL, NULL, on_done, NULL);
		notify_engine_run(e, 200);
		is_int((long long)notify_engine_jobs(e), 1, "job in flight");
		notify_job_cancel(job);
		is_int((long long)notify_engine_jobs(e), 0, "cancelled");
		is_int(done_calls, 0, "done not called for a cancelled job");
		job = notify_job_start(e, NULL, 0, body, strlen(body), 1, NULL, NULL, on_done, NULL);
		is_int(notify_engine_run(e, 1000), 0, "empty job ends");
		is_int(done_calls, 1, "and calls done");
		notify_job_free(job);
	}
	notify_engine_free(e);

	for (int i = 0; i < npids; i++) {
		kill(pids[i], SIGTERM);
		waitpid(pids[i], NULL, 0);
	}
	rm_rf(tmpdir);
	return done_testing();
}

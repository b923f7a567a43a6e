/*
 * kube_ssa - a plain concurrent Kubernetes client for the scale benchmarks:
 * N keep-alive HTTPS connections (HTTP/1.1, one request in flight on each),
 * client certificate auth (or a ServiceAccount's bearer token read from a
 * file, -t: never in argv), and a list of writes made from templates where
 * every "@N@" becomes the item's index.  It is the yardstick decod is
 * measured against ("what the API server itself sustains") and the fast
 * way to create 10,000 CRs or 1,000 pods.
 *
 *   kube_ssa -s URL -a CA {-c CERT -k KEY | -t TOKENFILE} [-j CONNS] [-n COUNT]
 *            [-f FIRST] -w METHOD PATH CTYPE BODY [-w ...]
 *
 * For item i in [FIRST, FIRST+COUNT) every -w is sent once (COUNT x writes
 * in all, interleaved).  BODY starting with '@' names a file.  Prints the
 * number of writes, errors, the wall time and writes/s; exits 1 on any
 * error (the first few answers are shown).
 */
#include "config.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXW 8

struct tpl {
	const char *method, *path, *ctype;
	char *body;
};

struct slot {
	CURL *h;
	struct curl_slist *hdrs;
	char *url, *body;
	char resp[512];
	size_t rlen;
};

static struct tpl w[MAXW];
static int nw;
static const char *server, *ca, *cert, *key;
static char *bearer;		/* "Authorization: Bearer ..." with -t */
static long next_item, end_item, errors, done_writes;
static int next_w;

static char *
subst(const char *t, long i)
{
	char num[32];
	size_t nl, cap = strlen(t) + 1, len = 0;
	char *out;
	const char *p;

	snprintf(num, sizeof(num), "%ld", i);
	nl = strlen(num);
	for (p = t; (p = strstr(p, "@N@")) != NULL; p += 3)
		cap += nl;
	out = malloc(cap);
	for (p = t; *p != '\0';) {
		if (strncmp(p, "@N@", 3) == 0) {
			memcpy(out + len, num, nl);
			len += nl;
			p += 3;
		} else
			out[len++] = *p++;
	}
	out[len] = '\0';
	return out;
}

static size_t
on_data(char *p, size_t sz, size_t n, void *arg)
{
	struct slot *s = arg;
	size_t k = sz * n, room = sizeof(s->resp) - 1 - s->rlen;

	memcpy(s->resp + s->rlen, p, k < room ? k : room);
	s->rlen += k < room ? k : room;
	s->resp[s->rlen] = '\0';
	return sz * n;
}

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *b;
	long n;

	if (f == NULL) {
		perror(path);
		exit(2);
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	b = malloc((size_t)n + 1);
	if (fread(b, 1, (size_t)n, f) != (size_t)n)
		exit(2);
	b[n] = '\0';
	fclose(f);
	return b;
}

/* start - the next write on slot s; 0 when none is left */
static int
start(CURLM *m, struct slot *s)
{
	const struct tpl *t;
	char *path, hdr[128];

	if (next_item >= end_item)
		return 0;
	t = &w[next_w];
	path = subst(t->path, next_item);
	free(s->url);
	free(s->body);
	if (asprintf(&s->url, "%s%s", server, path) < 0)
		exit(2);
	free(path);
	s->body = subst(t->body, next_item);
	if (++next_w == nw) {
		next_w = 0;
		next_item++;
	}
	curl_slist_free_all(s->hdrs);
	snprintf(hdr, sizeof(hdr), "Content-Type: %s", t->ctype);
	s->hdrs = curl_slist_append(NULL, hdr);
	s->hdrs = curl_slist_append(s->hdrs, "Accept: application/json");
	if (bearer != NULL)
		s->hdrs = curl_slist_append(s->hdrs, bearer);
	s->rlen = 0;
	curl_easy_setopt(s->h, CURLOPT_URL, s->url);
	curl_easy_setopt(s->h, CURLOPT_CUSTOMREQUEST, t->method);
	curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, s->body);
	curl_easy_setopt(s->h, CURLOPT_POSTFIELDSIZE, (long)strlen(s->body));
	curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, s->hdrs);
	curl_multi_add_handle(m, s->h);
	return 1;
}

int
main(int argc, char **argv)
{
	long conns = 16, count = 1, first = 0;
	struct slot *slots;
	struct timespec t0, t1;
	CURLM *m;
	int c, running = 0;
	double secs;

	while ((c = getopt(argc, argv, "s:a:c:k:t:j:n:f:w:")) != -1) {
		switch (c) {
		case 's': server = optarg; break;
		case 'a': ca = optarg; break;
		case 'c': cert = optarg; break;
		case 'k': key = optarg; break;
		case 't': {
			char *tok = slurp(optarg);

			tok[strcspn(tok, "\r\n")] = '\0';
			if (asprintf(&bearer, "Authorization: Bearer %s", tok) < 0)
				return 2;
			explicit_bzero(tok, strlen(tok));
			free(tok);
			break;
		}
		case 'j': conns = atol(optarg); break;
		case 'n': count = atol(optarg); break;
		case 'f': first = atol(optarg); break;
		case 'w':
			if (nw == MAXW || optind + 2 >= argc) {
				fprintf(stderr, "kube_ssa: bad -w\n");
				return 2;
			}
			w[nw].method = optarg;
			w[nw].path = argv[optind];
			w[nw].ctype = argv[optind + 1];
			w[nw].body = argv[optind + 2][0] == '@' ? slurp(argv[optind + 2] + 1) :
			    strdup(argv[optind + 2]);
			nw++;
			optind += 3;
			break;
		default:
			fprintf(stderr, "usage: kube_ssa -s URL -a CA {-c CERT -k KEY | -t TOKENFILE}"
			    " [-j CONNS] [-n COUNT] [-f FIRST] -w METHOD PATH CTYPE BODY ...\n");
			return 2;
		}
	}
	if (server == NULL || nw == 0 || conns < 1) {
		fprintf(stderr, "kube_ssa: -s and at least one -w are needed\n");
		return 2;
	}
	next_item = first;
	end_item = first + count;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	m = curl_multi_init();
	curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, conns);
	slots = calloc((size_t)conns, sizeof(*slots));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < conns; i++) {
		struct slot *s = &slots[i];

		s->h = curl_easy_init();
		curl_easy_setopt(s->h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
		curl_easy_setopt(s->h, CURLOPT_CAINFO, ca);
		if (bearer == NULL) {
			curl_easy_setopt(s->h, CURLOPT_SSLCERT, cert);
			curl_easy_setopt(s->h, CURLOPT_SSLKEY, key);
		}
		curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, on_data);
		curl_easy_setopt(s->h, CURLOPT_WRITEDATA, s);
		curl_easy_setopt(s->h, CURLOPT_PRIVATE, s);
		curl_easy_setopt(s->h, CURLOPT_USERAGENT, "kube_ssa");
		curl_easy_setopt(s->h, CURLOPT_TIMEOUT, 120L);
		if (start(m, s))
			running++;
	}
	while (running > 0) {
		CURLMsg *msg;
		int q, still;

		curl_multi_perform(m, &still);
		while ((msg = curl_multi_info_read(m, &q)) != NULL) {
			struct slot *s;
			long code = 0;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
			curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &code);
			curl_multi_remove_handle(m, s->h);
			if (msg->data.result != CURLE_OK || code < 200 || code > 299) {
				if (errors++ < 5)
					fprintf(stderr, "kube_ssa: %s: %ld %s %s\n", s->url, code,
					    curl_easy_strerror(msg->data.result), s->resp);
			} else
				done_writes++;
			if (!start(m, s))
				running--;
		}
		if (running > 0)
			curl_multi_poll(m, NULL, 0, 1000, NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("writes %ld errors %ld seconds %.3f per_second %.0f conns %ld\n",
	    done_writes, errors, secs, (double)done_writes / secs, conns);
	return errors > 0;
}

/*
 * kubetool - drives common/kube.c from the shell so the integration tests
 * exercise the real client against a real API server (and the fault proxy).
 * Test-only: built by `make check`, never installed.  Configuration comes
 * the way the stages get it: --kubeconfig / KUBECONFIG, else in-cluster.
 *
 *   kubetool get KIND NS NAME              the object as JSON; exit 1 + "HTTP n reason" on stderr
 *   kubetool list KIND NS [SELECTOR [PAGE]]  "N objects" then ns/name per line (sorted)
 *   kubetool apply KIND NS NAME MANAGER force|noforce FILE [status]
 *   kubetool delete KIND NS NAME
 *   kubetool raw METHOD PATH [FILE]        status line, then the body
 *   kubetool informer KIND NS [SELECTOR]   events as they come, until SIGTERM; then stats
 *   kubetool whoami                        server and namespace of the configuration
 * Calls print "attempts=N" on stderr so tests can see retries.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/json.h"
#include "common/kube.h"
#include "common/util.h"

static volatile int stop;

static void
on_sig(int sig)
{
	(void)sig;
	stop = 1;
}

static const struct kube_kind *
kind(const char *s)
{
	static const struct { const char *name; const struct kube_kind *kd; } t[] = {
		{ "configmaps", &kube_configmaps }, { "pods", &kube_pods },
		{ "secrets", &kube_secrets }, { "namespaces", &kube_namespaces },
		{ "services", &kube_services }, { "leases", &kube_leases },
		{ "decofiles", &kube_decofiles }, { "decofiletemplates", &kube_decofiletemplates },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strcmp(t[i].name, s) == 0)
			return t[i].kd;
	fprintf(stderr, "unknown kind %s\n", s);
	exit(2);
}

static int
report(struct kube_resp *r)
{
	int ok = kube_ok(r);

	fprintf(stderr, "attempts=%d status=%ld\n", r->attempts, r->status);
	if (!ok)
		fprintf(stderr, "HTTP %ld %s: %s\n", r->status, r->reason, r->err);
	kube_resp_free(r);
	return ok ? 0 : 1;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
on_event(void *arg, enum kube_event ev, yajl_val obj, yajl_val old)
{
	static const char *names[] = { "ADDED", "MODIFIED", "DELETED", "SYNCED" };
	struct kube_informer **inf = arg;

	(void)old;
	if (ev == KUBE_SYNCED)
		printf("SYNCED %zu\n", kube_informer_count(*inf));
	else
		printf("%s %s/%s rv=%s\n", names[ev], kube_obj_ns(obj), kube_obj_name(obj),
		    kube_obj_rv(obj));
	fflush(stdout);
}

int
main(int argc, char **argv)
{
	struct conf *cf;
	struct kube *k;
	char err[1024];
	int rc = 2;

	if ((cf = conf_from_args(&argc, argv)) == NULL)
		return 2;
	if (argc < 2) {
		fprintf(stderr, "usage: kubetool [--kubeconfig F] get|list|apply|delete|raw|informer|whoami ...\n");
		return 2;
	}
	if ((k = kube_from_conf(cf, err, sizeof(err))) == NULL) {
		fprintf(stderr, "%s\n", err[0] != '\0' ? err : "no cluster configured");
		return 2;
	}
	signal(SIGTERM, on_sig);
	signal(SIGINT, on_sig);
	if (strcmp(argv[1], "whoami") == 0) {
		printf("%s %s\n", kube_server(k), kube_namespace(k));
		rc = 0;
	} else if (strcmp(argv[1], "get") == 0 && argc == 5) {
		char *p = kube_path(kind(argv[2]), argv[3], argv[4], NULL, NULL);
		struct kube_resp *r = kube_do(k, "GET", p, NULL, NULL, 0, 0);

		if (kube_ok(r))
			printf("%s\n", r->body);
		rc = report(r);
		free(p);
	} else if (strcmp(argv[1], "delete") == 0 && argc == 5) {
		char *p = kube_path(kind(argv[2]), argv[3], argv[4], NULL, NULL);

		rc = report(kube_do(k, "DELETE", p, NULL, NULL, 0, 0));
		free(p);
	} else if (strcmp(argv[1], "list") == 0 && argc >= 4) {
		yajl_val items;
		char rv[64];

		if (kube_list_all(k, kind(argv[2]), argv[3], argc > 4 ? argv[4] : NULL,
		    argc > 5 ? strtoul(argv[5], NULL, 10) : 0, &items, rv, sizeof(rv),
		    err, sizeof(err)) < 0) {
			fprintf(stderr, "%s\n", err);
			rc = 1;
		} else {
			size_t n = items->u.array.len;
			char **names = xcalloc(n + 1, sizeof(*names));

			for (size_t i = 0; i < n; i++)
				names[i] = xasprintf("%s/%s", kube_obj_ns(items->u.array.values[i]),
				    kube_obj_name(items->u.array.values[i]));
			if (n > 0)
				qsort(names, n, sizeof(*names), cmp_str);
			printf("%zu objects rv=%s\n", n, rv[0] != '\0' ? "set" : "none");
			for (size_t i = 0; i < n; i++) {
				printf("%s\n", names[i]);
				free(names[i]);
			}
			free(names);
			yajl_tree_free(items);
			rc = 0;
		}
	} else if (strcmp(argv[1], "apply") == 0 && (argc == 8 || argc == 9)) {
		size_t len;
		char *body = read_file(strcmp(argv[7], "-") == 0 ? "/dev/stdin" : argv[7], &len, 0);
		char *p;

		if (body == NULL) {
			perror(argv[7]);
			return 2;
		}
		p = kube_apply_path(kind(argv[2]), argv[3], argv[4], argc == 9 ? argv[8] : NULL,
		    argv[5], strcmp(argv[6], "force") == 0);
		rc = report(kube_do(k, "PATCH", p, KUBE_APPLY_CTYPE, body, len, 0));
		free(p);
		free(body);
	} else if (strcmp(argv[1], "raw") == 0 && argc >= 4) {
		size_t len = 0;
		char *body = argc > 4 ? read_file(argv[4], &len, 0) : NULL;
		struct kube_resp *r = kube_do(k, argv[2], argv[3], NULL, body, len, 0);

		printf("%ld\n%s\n", r->status, r->body != NULL ? r->body : "");
		rc = report(r);
		free(body);
	} else if (strcmp(argv[1], "informer") == 0 && argc >= 4) {
		struct kube_informer *inf = NULL;
		struct kube_informer_stats is;
		struct kube_stats ks;

		inf = kube_informer_new(k, kind(argv[2]), argv[3], argc > 4 ? argv[4] : NULL,
		    on_event, &inf);
		kube_run(k, -1, &stop);
		kube_informer_get_stats(inf, &is);
		kube_get_stats(k, &ks);
		printf("STATS lists=%llu watches=%llu events=%llu bookmarks=%llu gone=%llu "
		    "reconnects=%llu count=%zu calls=%llu retries=%llu throttled=%llu\n",
		    (unsigned long long)is.lists, (unsigned long long)is.watches,
		    (unsigned long long)is.events, (unsigned long long)is.bookmarks,
		    (unsigned long long)is.gone, (unsigned long long)is.reconnects,
		    kube_informer_count(inf), (unsigned long long)ks.calls,
		    (unsigned long long)ks.retries, (unsigned long long)ks.throttled);
		fflush(stdout);
		rc = 0;
	} else {
		fprintf(stderr, "kubetool: bad arguments\n");
	}
	kube_free(k);
	conf_free(cf);
	return rc;
}

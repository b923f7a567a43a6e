/*
 * fuzz_kube - the Kubernetes API client's answers as it reads them, each
 * input taken four ways: as a call's answer (status line, Retry-After,
 * body in two pieces, a Status error object's reason and message), as a
 * list page fed to an informer (items, metadata.continue, resourceVersion),
 * as a watch stream split at a point the input picks (ADDED, MODIFIED,
 * DELETED, BOOKMARK, ERROR with a 410 Status, partial lines) and as a
 * kubeconfig.  kube.c and kube_informer.c are included for their statics;
 * calls the informer starts go to a client whose loop never runs.
 */
#include "config.h"

#include "common/kube/kube.c"
#include "common/kube/kube_informer.c"

#include "t/fuzz/fuzz.h"

static struct kube *K;
static const long statuses[] = { 200, 410, 409, 422, 500, 429, 404, 401 };

struct seen {
	size_t events;
};

static void
on_event(void *arg, enum kube_event ev, yajl_val obj, yajl_val old)
{
	struct seen *s = arg;

	s->events++;
	if (ev == KUBE_SYNCED)
		return;
	fuzz_check(obj != NULL, "an event has an object");
	fuzz_check(ev == KUBE_MODIFIED || old == NULL, "only MODIFIED has an old object");
	fuzz_check(ev != KUBE_MODIFIED || old != NULL, "MODIFIED has an old object");
	/* what a stage reads from every object */
	(void)strlen(kube_obj_ns(obj));
	(void)strlen(kube_obj_name(obj));
	(void)strlen(kube_obj_rv(obj));
	(void)strlen(kube_obj_uid(obj));
}

/* informer - one as kube_informer_new makes it, without its first list */
static struct kube_informer *
informer(struct seen *s)
{
	struct kube_informer *inf = xcalloc(1, sizeof(*inf));

	inf->k = K;
	inf->kd = &kube_configmaps;
	inf->fn = on_event;
	inf->arg = s;
	inf->pages_tail = &inf->pages;
	buf_init(&inf->in);
	kube_informer_register(K, inf);
	return inf;
}

/* answer - the input as the answer to a call, status from its last byte */
static void
answer(const char *data, size_t size, size_t cut, long status)
{
	struct kube_call *c = xcalloc(1, sizeof(*c));
	char line[64];
	struct seen s = { 0 };
	struct kube_informer *inf;

	c->k = K;
	c->method = xstrdup("GET");
	c->path = xstrdup("/api/v1/configmaps?limit=500");
	c->r.reason = "";
	c->attempts = 1;
	buf_init(&c->resp);
	snprintf(line, sizeof(line), "HTTP/2 %ld \r\n", status);
	on_header(line, 1, strlen(line), c);
	/* the same bytes as a header line: Retry-After and the status line */
	on_header((char *)data, 1, size < 64 ? size : 64, c);
	if (on_body((char *)data, 1, cut, c) == cut)
		on_body((char *)data + cut, 1, size - cut, c);
	call_finish(c, status, CURLE_OK);
	fuzz_check(c->r.body != NULL && c->r.reason != NULL, "an answer has a body and a reason");
	fuzz_check(kube_ok(&c->r) || c->r.err[0] != '\0', "an error answer says why");
	fuzz_check(strlen(c->r.body) <= c->r.len, "the body is NUL-terminated");

	/* a list page, as the informer takes it: kept, then delivered by the pump */
	inf = informer(&s);
	on_list(inf, &c->r);
	for (int rounds = 0; kube_informer_pump(inf); )
		fuzz_check(++rounds < 1000000, "pump ends");
	call_free(c);
	kube_informer_free(inf);
}

/* stream - the input as a watch stream in two pieces, then its end */
static void
stream(const char *data, size_t size, size_t cut, long status)
{
	struct seen s = { 0 };
	struct kube_informer *inf = informer(&s);
	struct kube_resp r;
	int rounds = 0;

	inf->state = INF_WATCHING;
	on_watch_data(inf, data, cut);
	kube_informer_pump(inf);
	if (inf->state == INF_WATCHING)
		on_watch_data(inf, data + cut, size - cut);
	while (kube_informer_pump(inf))
		fuzz_check(++rounds < 1000000, "pump ends");
	fuzz_check(inf->t.n == kube_informer_count(inf), "the cache counts itself");
	fuzz_check(strlen(kube_informer_rv(inf)) < sizeof(inf->rv), "rv fits");
	if (inf->state == INF_WATCHING) {
		memset(&r, 0, sizeof(r));
		r.status = status;
		r.reason = "";
		r.body = (char *)"";
		on_watch_end(inf, &r);
	}
	kube_informer_free(inf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kube_config kc;
	char err[256];
	size_t cut = size > 0 ? (size_t)data[0] * size / 256 : 0;
	long status = size > 0 ? statuses[data[size - 1] % 8] : 200;

	if (K == NULL) {
		struct kube_config c = { 0 };

		log_init("fuzz_kube", LOG_ERROR, LOG_FMT_KV);	/* bad answers warn */
		c.server = (char *)"http://127.0.0.1:9";
		c.namespace = (char *)"decod";
		if ((K = kube_new(&c, 1000, err, sizeof(err))) == NULL)
			abort();
	}
	answer((const char *)data, size, cut, 200);
	answer((const char *)data, size, cut, status);
	stream((const char *)data, size, cut, status);
	fuzz_check(K->calls == NULL, "every call the informers started is gone with them");

	memset(&kc, 0, sizeof(kc));
	err[0] = '\0';
	if (kube_config_parse(&kc, (const char *)data, size, "/nonexistent", NULL,
	    err, sizeof(err)) == 0) {
		fuzz_check(kc.server != NULL && kc.server[0] != '\0', "a kubeconfig names a server");
		fuzz_check(kc.namespace != NULL, "a kubeconfig has a namespace");
	} else
		fuzz_check(err[0] != '\0' && kc.server == NULL, "a refused kubeconfig says why");
	kube_config_free(&kc);
	return 0;
}

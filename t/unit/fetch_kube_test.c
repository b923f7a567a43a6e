/*
 * fetch_kube_test - the front door's pure parts: a CR's store form (name,
 * namespace, labels, annotations with the uid mark, spec; status and
 * kubectl's last-applied copy left out) and the status apply body, with
 * "the CR already shows it" so a restart writes nothing; and the merged
 * status read from the fragments listed at start-up (the preload) the
 * same as from the store, one CR's fragments only.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/kube/kube_front.h"
#include "daemons/kube/kube_front_int.h"
#include "t/tap.h"

static yajl_val
parse(const char *s)
{
	return json_parse(s, strlen(s), NULL);
}

/* preload_rows - four fragments of three CRs, as a store list holds them (sorted by key) */
static void
preload_rows(struct store_list *l)
{
	static const char *rows[][4] = {
		{ "d1", "fetcher", "{\"sourceType\":\"inline\",\"conditions\":[{\"type\":"
		    "\"Syncing\",\"status\":\"True\",\"reason\":\"Fetched\"}]}" },
		{ "d1", "publisher", "{\"contentHash\":\"h1\",\"conditions\":[{\"type\":"
		    "\"Ready\",\"status\":\"True\",\"reason\":\"ConfigMapCreated\"}]}" },
		{ "d10", "fetcher", "{\"sourceType\":\"git\"}" },
		{ "d2", "renderer", "{\"format\":\"bin\"}" },
	};

	l->n = sizeof(rows) / sizeof(rows[0]);
	l->kvs = xcalloc(l->n, sizeof(*l->kvs));
	for (size_t i = 0; i < l->n; i++) {
		l->kvs[i].key = key_status("decofiles", "a", rows[i][0], rows[i][1]);
		l->kvs[i].value = xstrdup(rows[i][2]);
		l->kvs[i].vlen = strlen(rows[i][2]);
	}
}

/* preload - the merge read from the preload is the store's merge of the CR's own rows */
static void
preload(void)
{
	struct kube_front *fk = xcalloc(1, sizeof(*fk));
	struct store_list l;
	struct buf a, b;

	preload_rows(&l);
	buf_init(&b);
	resource_status_merge_kvs(l.kvs, 2, &b);	/* d1's two rows */
	kube_front_preload(fk, &l);
	ok(l.kvs == NULL && l.n == 0, "the preload takes the list");
	buf_init(&a);
	ok(kf_preload_merged(fk, "decofiles", "a", "d1", &a) == 0, "d1 read from the preload");
	is_str(a.data, b.data, "... merged as from the store");
	ok(strstr(a.data, "git") == NULL && strstr(a.data, "\"h1\"") != NULL,
	    "... d1's rows only (not d10's, which shares the name's start)");
	buf_reset(&a);
	ok(kf_preload_merged(fk, "decofiles", "a", "d10", &a) == 0 &&
	    strstr(a.data, "\"git\"") != NULL && strstr(a.data, "h1") == NULL, "d10: its one row");
	buf_reset(&a);
	buf_reset(&b);
	resource_status_merge_kvs(NULL, 0, &b);
	ok(kf_preload_merged(fk, "decofiles", "a", "d3", &a) == 0, "a CR without rows");
	is_str(a.data, b.data, "... merges to nothing, as from the store");
	buf_reset(&a);
	ok(kf_preload_merged(fk, "templates", "a", "d1", &a) < 0,
	    "templates are not preloaded: read from the store");
	ok(fk->preload_used == 3, "three comparisons counted");
	kube_front_preload_drop(fk);
	ok(kf_preload_merged(fk, "decofiles", "a", "d1", &a) < 0, "dropped: read from the store");
	kube_front_preload_drop(fk);	/* twice is harmless */
	kube_front_preload_drop(NULL);
	buf_free(&a);
	buf_free(&b);
	free(fk);
}

int
main(void)
{
	yajl_val cr = parse("{\"apiVersion\":\"deco.sites/v1alpha1\",\"kind\":\"Decofile\","
	    "\"metadata\":{\"name\":\"loja\",\"namespace\":\"sites-loja\",\"uid\":\"u-1\","
	    "\"generation\":4,\"resourceVersion\":\"77\",\"labels\":{\"a\":\"b\"},"
	    "\"annotations\":{\"deco.sites/deletion\":\"detach\","
	    "\"kubectl.kubernetes.io/last-applied-configuration\":\"{...}\"},"
	    "\"managedFields\":[]},\"spec\":{\"source\":\"inline\",\"inline\":{\"value\":{\"A\":1}}},"
	    "\"status\":{\"contentHash\":\"x\"}}");
	yajl_val doc, frag, cur, body;
	char *text;
	size_t len;
	int same;

	doc = kube_front_mirror_doc(cr);
	ok(doc != NULL, "a CR has a store form");
	is_str(json_get_str(doc, "metadata", "name", NULL), "loja", "name");
	is_str(json_get_str(doc, "metadata", "namespace", NULL), "sites-loja", "namespace");
	is_str(json_get_str(doc, "metadata", "labels", "a", NULL), "b", "labels kept");
	is_str(json_get_str(doc, "metadata", "annotations", "deco.sites/deletion", NULL), "detach",
	    "annotations kept (the deletion policy)");
	is_str(json_get_str(doc, "metadata", "annotations", KUBE_FRONT_UID_ANNOTATION, NULL), "u-1",
	    "marked with the CR's uid");
	ok(json_get(doc, "metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration",
	    NULL) == NULL, "kubectl's last-applied copy left out");
	ok(json_get(doc, "status", NULL) == NULL && json_get(doc, "metadata", "managedFields", NULL) ==
	    NULL && json_get(doc, "metadata", "resourceVersion", NULL) == NULL,
	    "status and server metadata left out");
	is_int(json_get_int(doc, 0, "spec", "inline", "value", "A", NULL), 1, "spec as it is");
	yajl_tree_free(doc);
	{
		yajl_val nospec = parse("{\"kind\":\"Decofile\",\"metadata\":{\"name\":\"a\",\"namespace\":\"b\"}}");

		ok(kube_front_mirror_doc(nospec) == NULL, "no spec: not mirrored");
		yajl_tree_free(nospec);
	}

	frag = parse("{\"contentHash\":\"abc\",\"timestamp\":5,\"conditions\":[{\"type\":\"Ready\","
	    "\"status\":\"True\",\"reason\":\"ConfigMapCreated\",\"message\":\"m\","
	    "\"lastTransitionTime\":\"2026-12-04T10:00:00Z\"}]}");
	text = kube_front_status_body("Decofile", "sites-loja", "loja", frag, cr, &same, NULL, 0, &len);
	body = parse(text);
	ok(body != NULL, "the status body is JSON");
	ok(!same, "a CR without the fields needs the write");
	is_str(json_get_str(body, "kind", NULL), "Decofile", "kind");
	is_str(json_get_str(body, "metadata", "name", NULL), "loja", "name");
	is_str(json_get_str(body, "status", "contentHash", NULL), "abc", "fields under status");
	ok(json_get(body, "spec", NULL) == NULL, "no spec in a status apply");
	yajl_tree_free(body);
	free(text);

	cur = parse("{\"status\":{\"contentHash\":\"abc\",\"timestamp\":5,\"other\":1,\"conditions\":["
	    "{\"type\":\"PodsNotified\",\"status\":\"True\"},{\"type\":\"Ready\",\"status\":\"True\","
	    "\"reason\":\"ConfigMapCreated\",\"message\":\"m\",\"lastTransitionTime\":"
	    "\"2026-12-04T10:00:00Z\"}]}}");
	text = kube_front_status_body("Decofile", "sites-loja", "loja", frag, cur, &same, NULL, 0, &len);
	ok(same, "the CR already shows the fragment: no write (a restart writes nothing)");
	free(text);
	yajl_tree_free(cur);
	cur = parse("{\"status\":{\"contentHash\":\"abc\",\"timestamp\":5,\"conditions\":["
	    "{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"ConfigMapCreated\",\"message\":\"old\","
	    "\"lastTransitionTime\":\"2026-12-04T10:00:00Z\"}]}}");
	text = kube_front_status_body("Decofile", "sites-loja", "loja", frag, cur, &same, NULL, 0, &len);
	ok(!same, "a condition's message differs: write");
	free(text);
	yajl_tree_free(cur);
	cur = parse("{\"status\":{\"contentHash\":\"abc\",\"timestamp\":6}}");
	text = kube_front_status_body("Decofile", "sites-loja", "loja", frag, cur, &same, NULL, 0, &len);
	ok(!same, "a field differs: write");
	free(text);
	yajl_tree_free(cur);
	text = kube_front_status_body("Decofile", "sites-loja", "loja", NULL, NULL, &same, NULL, 0, &len);
	body = parse(text);
	ok(!same && body != NULL && json_get(body, "status", NULL) != NULL &&
	    json_get(body, "status", NULL)->u.object.len == 0,
	    "a deleted fragment: an empty status releases the stage's fields");
	yajl_tree_free(body);
	free(text);
	yajl_tree_free(frag);
	yajl_tree_free(cr);

	/* adoption: the old managers' status entries go, the rest stay, guarded by the rv */
	cur = parse("{\"metadata\":{\"resourceVersion\":\"42\",\"managedFields\":["
	    "{\"manager\":\"kubectl\",\"operation\":\"Apply\",\"fieldsV1\":{\"f:spec\":{}}},"
	    "{\"manager\":\"decod-fetcher\",\"operation\":\"Apply\",\"subresource\":\"status\"},"
	    "{\"manager\":\"decod\",\"operation\":\"Apply\",\"subresource\":\"status\"},"
	    "{\"manager\":\"kubectl-patch\",\"operation\":\"Update\",\"subresource\":\"status\"},"
	    "{\"manager\":\"manager\",\"operation\":\"Update\",\"subresource\":\"status\"},"
	    "{\"manager\":\"decod-publisher\",\"operation\":\"Apply\"}]}}");
	text = kube_front_adopt_patch(cur, &len);
	body = text != NULL ? parse(text) : NULL;
	ok(body != NULL && YAJL_IS_ARRAY(body) && body->u.array.len == 2, "adoption: a JSON patch of two ops");
	if (body != NULL && YAJL_IS_ARRAY(body) && body->u.array.len == 2) {
		yajl_val t = body->u.array.values[0], r = body->u.array.values[1], mf;

		is_str(json_get_str(t, "op", NULL), "test", "... first a test");
		is_str(json_get_str(t, "path", NULL), "/metadata/resourceVersion", "... of the resourceVersion");
		is_str(json_get_str(t, "value", NULL), "42", "... as read");
		is_str(json_get_str(r, "op", NULL), "replace", "... then a replace");
		is_str(json_get_str(r, "path", NULL), "/metadata/managedFields", "... of managedFields");
		mf = json_get(r, "value", NULL);
		ok(mf != NULL && YAJL_IS_ARRAY(mf) && mf->u.array.len == 4,
		    "decod-fetcher's and the operator's status entries removed, four kept");
		if (mf != NULL && YAJL_IS_ARRAY(mf) && mf->u.array.len == 4) {
			is_str(json_get_str(mf->u.array.values[0], "manager", NULL), "kubectl", "kept: spec's");
			is_str(json_get_str(mf->u.array.values[1], "manager", NULL), "decod", "kept: decod's");
			is_str(json_get_str(mf->u.array.values[2], "manager", NULL), "kubectl-patch",
			    "kept: a person's status edit");
			is_str(json_get_str(mf->u.array.values[3], "manager", NULL), "decod-publisher",
			    "kept: an entry not on the status subresource");
		}
	}
	yajl_tree_free(body);
	free(text);
	yajl_tree_free(cur);
	cur = parse("{\"metadata\":{\"resourceVersion\":\"7\",\"managedFields\":["
	    "{\"manager\":\"decod-notifier\",\"subresource\":\"status\"}]}}");
	text = kube_front_adopt_patch(cur, &len);
	ok(text != NULL && strstr(text, "\"value\":[{}]") != NULL,
	    "every entry stale: [{}] clears them (an empty list would change nothing)");
	free(text);
	yajl_tree_free(cur);
	cur = parse("{\"metadata\":{\"resourceVersion\":\"7\",\"managedFields\":["
	    "{\"manager\":\"decod\",\"subresource\":\"status\"}]}}");
	ok(kube_front_adopt_patch(cur, &len) == NULL, "only decod's entry: nothing to adopt");
	yajl_tree_free(cur);
	{
		static const struct { const char *st; int settling; const char *what; } cases[] = {
			{ "{\"observedGeneration\":1,\"conditions\":[{\"type\":\"Syncing\","
			  "\"status\":\"True\",\"reason\":\"Fetched\"}]}", 1,
			  "fetched, not yet published: held" },
			{ "{\"conditions\":[{\"type\":\"Syncing\",\"status\":\"True\"},"
			  "{\"type\":\"Ready\",\"status\":\"Unknown\"}]}", 1, "publishing: held" },
			{ "{\"contentHash\":\"h2\",\"notifiedHash\":\"h1\",\"conditions\":["
			  "{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"PodsNotified\","
			  "\"status\":\"True\"}]}", 1, "published, the rollout speaks of the old hash: held" },
			{ "{\"contentHash\":\"h2\",\"conditions\":[{\"type\":\"Ready\","
			  "\"status\":\"True\"}]}", 1, "published, no rollout word yet: held" },
			{ "{\"contentHash\":\"h2\",\"notifiedHash\":\"h2\",\"conditions\":["
			  "{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"PodsNotified\","
			  "\"status\":\"Unknown\"}]}", 1, "rolling out: held" },
			{ "{\"contentHash\":\"h2\",\"notifiedHash\":\"h2\",\"conditions\":["
			  "{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"Drifted\","
			  "\"status\":\"False\"},{\"type\":\"PodsNotified\",\"status\":\"True\"}]}",
			  0, "published and rolled out: written" },
			{ "{\"conditions\":[{\"type\":\"Syncing\",\"status\":\"False\","
			  "\"reason\":\"FetchFailed\"}]}", 0, "a fetch failure: written at once" },
			{ "{\"contentHash\":\"h2\",\"notifiedHash\":\"h2\",\"conditions\":["
			  "{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"PodsNotified\","
			  "\"status\":\"False\"}]}", 0, "a failed rollout: written at once" },
			{ "{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}", 0,
			  "a failed publication: written at once" },
			{ "{\"observedGeneration\":2,\"conditions\":[{\"type\":\"Syncing\","
			  "\"status\":\"True\"},{\"type\":\"TemplateUpdateAvailable\","
			  "\"status\":\"False\",\"reason\":\"UpToDate\"}]}", 1,
			  "rendered with its templates up to date, not yet published: held "
			  "(TemplateUpdateAvailable=False is no failure)" },
		};

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			cur = parse(cases[i].st);
			is_int(kube_front_settling(cur, 1, 1), cases[i].settling, "%s", cases[i].what);
			if (i == 0)
				is_int(kube_front_settling(cur, 0, 0), 0,
				    "... unless no publisher runs here: written at once");
			if (i == 3)
				is_int(kube_front_settling(cur, 1, 0), 0,
				    "... unless no notifier runs here: written at once");
			yajl_tree_free(cur);
		}
		cur = parse("{\"conditions\":[{\"type\":\"Drifted\",\"status\":\"False\"},"
		    "{\"type\":\"TemplateUpdateAvailable\",\"status\":\"False\"}]}");
		is_int(kube_front_failing(cur), 0, "Drifted=False, TemplateUpdateAvailable=False: no failure");
		yajl_tree_free(cur);
		cur = parse("{\"conditions\":[{\"type\":\"PodsNotified\",\"status\":\"False\"}]}");
		is_int(kube_front_failing(cur), 1, "PodsNotified=False: a failure, never held");
		yajl_tree_free(cur);
	}
	preload();
	return done_testing();
}

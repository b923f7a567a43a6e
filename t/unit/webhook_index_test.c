/*
 * webhook_index_test - the webhook's in-memory tables past their first
 * growth: 1,000 Decofiles and 1,000 Services found, replaced, deleted;
 * a deploymentId claimed twice resolves to the name that sorts first;
 * users come back sorted and capped.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "daemons/webhook/webhook_index.h"
#include "t/tap.h"

int
main(void)
{
	struct wh_index *ix = wh_index_new();
	const struct wh_decofile *d;
	char ns[32], name[32], doc[160];
	size_t ndf, nsvc, bad = 0;
	struct buf b;

	for (int i = 0; i < 1000; i++) {
		snprintf(ns, sizeof(ns), "ns-%d", i % 7);
		snprintf(name, sizeof(name), "df-%d", i);
		snprintf(doc, sizeof(doc), "{\"metadata\":{\"name\":\"%s\"},\"spec\":"
		    "{\"deploymentId\":\"dep-%d\"%s}}", name, i, i % 2 ? ",\"target\":\"s3\"" : "");
		if (wh_index_put_decofile(ix, ns, name, doc, strlen(doc), "configmap") < 0)
			bad++;
	}
	is_int(bad, 0, "1,000 Decofiles put");
	wh_index_counts(ix, &ndf, &nsvc);
	is_int(ndf, 1000, "the index holds 1,000");
	for (int i = 0; i < 1000; i++) {
		snprintf(ns, sizeof(ns), "ns-%d", i % 7);
		snprintf(name, sizeof(name), "dep-%d", i);
		d = wh_index_find(ix, ns, name);
		if (d == NULL || strncmp(d->name, "df-", 3) != 0 || atoi(d->name + 3) != i ||
		    strcmp(d->target, i % 2 ? "s3" : "configmap") != 0)
			bad++;
	}
	is_int(bad, 0, "each found by namespace and deploymentId, with its target");
	ok(wh_index_find(ix, "ns-1", "dep-0") == NULL, "not from another namespace");

	/* a new deploymentId for df-3: the old one no longer finds it */
	snprintf(doc, sizeof(doc), "{\"spec\":{\"deploymentId\":\"moved\"}}");
	wh_index_put_decofile(ix, "ns-3", "df-3", doc, strlen(doc), "configmap");
	ok(wh_index_find(ix, "ns-3", "dep-3") == NULL, "a replaced Decofile leaves its old deploymentId");
	d = wh_index_find(ix, "ns-3", "moved");
	is_str(d ? d->name : NULL, "df-3", "and is found by the new one");
	/* two claim the same deploymentId: the name that sorts first wins */
	snprintf(doc, sizeof(doc), "{\"spec\":{\"deploymentId\":\"moved\"}}");
	wh_index_put_decofile(ix, "ns-3", "df-0003", doc, strlen(doc), "configmap");
	d = wh_index_find(ix, "ns-3", "moved");
	is_str(d ? d->name : NULL, "df-0003", "a deploymentId claimed twice: the first name");
	ok(wh_index_put_decofile(ix, "ns-3", "df-0003", "{bad", 4, "configmap") < 0,
	    "a document that does not parse is refused");
	d = wh_index_find(ix, "ns-3", "moved");
	is_str(d ? d->name : NULL, "df-3", "and removes the entry it replaced");
	for (int i = 0; i < 1000; i += 2) {
		snprintf(ns, sizeof(ns), "ns-%d", i % 7);
		snprintf(name, sizeof(name), "df-%d", i);
		wh_index_del_decofile(ix, ns, name);
	}
	wh_index_counts(ix, &ndf, &nsvc);
	is_int(ndf, 500, "half deleted");
	ok(wh_index_find(ix, "ns-0", "dep-0") == NULL && wh_index_find(ix, "ns-1", "dep-1") != NULL,
	    "the deleted are gone, the others stay");

	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "svc-%03d", i);
		wh_index_set_service(ix, i < 30 ? "sites-a" : "sites-b", name, i % 2 ? "loja" : "blog");
	}
	wh_index_counts(ix, &ndf, &nsvc);
	is_int(nsvc, 1000, "1,000 Services");
	is_int(wh_index_set_service(ix, "sites-a", "svc-001", "loja"), 0, "the same record: no change");
	is_int(wh_index_set_service(ix, "sites-a", "svc-001", "blog"), 1, "another Decofile: a change");
	is_str(wh_index_service(ix, "sites-a", "svc-001"), "blog", "and it is read back");
	buf_init(&b);
	buf_adds(&b, "");
	is_int(wh_index_users(ix, "sites-a", "loja", &b, 3), 14, "14 Services of sites-a use loja");
	is_str(b.data, "svc-003, svc-005, svc-007", "named sorted, at most 3");
	buf_free(&b);
	is_int(wh_index_drop_service(ix, "sites-a", "svc-003"), 1, "a Service dropped");
	is_int(wh_index_drop_service(ix, "sites-a", "svc-003"), 0, "dropping it again changes nothing");
	ok(wh_index_service(ix, "sites-a", "svc-003") == NULL, "and it is gone");
	wh_index_free(ix);
	wh_index_free(NULL);
	return done_testing();
}

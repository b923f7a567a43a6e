/*
 * cli_get - the commands that read resources: get (tables like kubectl, or
 * the whole resource with its merged status as JSON/YAML), status (one line
 * per decofile, like nomos status) and describe (conditions, location,
 * replicas' confirmations, inventory and recent history from the journal).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "common/conf.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/resource.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/view.h"

/* a list of parsed resources, sorted as the store lists them */
struct reslist {
	yajl_val *v;
	size_t n;
};

static void
reslist_free(struct reslist *l)
{
	for (size_t i = 0; i < l->n; i++)
		yajl_tree_free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* list_resources - every resource of plural in c->ns (or all with -A); 0 or -1 */
static int
list_resources(struct cli *c, const char *plural, struct reslist *out)
{
	char *prefix = key_resource_prefix(plural, c->all_ns ? NULL : c->ns);
	struct store_list l;

	out->v = NULL;
	out->n = 0;
	if (store_list(c->st, prefix, &l) < 0) {
		cli_error("cannot list %s: %s", plural, store_error(c->st));
		free(prefix);
		return -1;
	}
	free(prefix);
	for (size_t i = 0; i < l.n; i++) {
		char kind[254], ns[254], name[254];
		struct json_error je;
		yajl_val v;

		if (key_parse_resource(l.kvs[i].key, kind, ns, name) < 0)
			continue;
		if ((v = json_parse(l.kvs[i].value, l.kvs[i].vlen, &je)) == NULL ||
		    !YAJL_IS_OBJECT(v)) {
			fprintf(stderr, "warning: %s is not a resource (%s); skipped\n",
			    l.kvs[i].key, v ? "not an object" : je.msg);
			if (v)
				yajl_tree_free(v);
			continue;
		}
		out->v = xrealloc(out->v, (out->n + 1) * sizeof(*out->v));
		out->v[out->n++] = v;
	}
	store_list_free(&l);
	return 0;
}

static const char *
meta(yajl_val doc, const char *field)
{
	const char *s = json_get_str(doc, "metadata", field, NULL);

	return s ? s : "";
}

/* --- get -------------------------------------------------------------- */

static void
get_table_header(struct cli *c, const char *plural, struct table *t)
{
	if (strcmp(plural, "decofiles") == 0 && c->out == OUT_WIDE)
		table_init(t, 12, "NAMESPACE", "NAME", "SOURCE", "TARGET", "GENERATION", "READY",
		    "AGE", "SYNCING", "PODSNOTIFIED", "COMMIT", "HASH", "MESSAGE");
	else if (strcmp(plural, "decofiles") == 0)
		table_init(t, 7, "NAMESPACE", "NAME", "SOURCE", "TARGET", "GENERATION", "READY",
		    "AGE");
	else if (strcmp(plural, "templates") == 0)
		table_init(t, 5, "NAMESPACE", "NAME", "SOURCE", "GENERATION", "AGE");
	else
		table_init(t, 6, "NAMESPACE", "NAME", "SITE", "VALKEYACL", "PROVISIONED", "AGE");
}

static void
get_table_row(struct cli *c, const char *plural, yajl_val doc, struct table *t)
{
	char age[32], gen[32];

	cli_age_since(meta(doc, "created_at"), age, sizeof(age));
	snprintf(gen, sizeof(gen), "%lld",
	    (long long)json_get_int(doc, 0, "metadata", "generation", NULL));
	if (strcmp(plural, "decofiles") == 0) {
		yajl_val st = cli_merged_status(c, plural, meta(doc, "namespace"),
		    meta(doc, "name"));
		const char *target = decofile_target(doc, conf_get(c->cf, "default_target"));
		char msg[1024];

		if (c->out == OUT_WIDE) {
			cli_status_message(st, msg, sizeof(msg));
			table_row(t, meta(doc, "namespace"), meta(doc, "name"),
			    decofile_source(doc), target, gen, cli_condition_status(st, "Ready"),
			    age, cli_condition_status(st, "Syncing"),
			    cli_condition_status(st, "PodsNotified"),
			    cli_short(json_get_str(st, "githubCommit", NULL), 7),
			    cli_short(json_get_str(st, "contentHash", NULL), 12),
			    msg[0] ? msg : "-");
		} else {
			table_row(t, meta(doc, "namespace"), meta(doc, "name"),
			    decofile_source(doc), target, gen, cli_condition_status(st, "Ready"),
			    age);
		}
		yajl_tree_free(st);
	} else if (strcmp(plural, "templates") == 0) {
		table_row(t, meta(doc, "namespace"), meta(doc, "name"), decofile_source(doc),
		    gen, age);
	} else {
		yajl_val acl = json_get(doc, "spec", "valkeyAcl", NULL);
		const char *site = json_get_str(doc, "spec", "site", NULL);
		yajl_val st = cli_merged_status(c, plural, meta(doc, "namespace"),
		    meta(doc, "name"));

		/* the acl stage's reading: valkeyAcl absent asks for a user */
		table_row(t, meta(doc, "namespace"), meta(doc, "name"), site ? site : "-",
		    acl == NULL || YAJL_IS_TRUE(acl) ? "true" : "false",
		    cli_condition_status(st, "Provisioned"), age);
		yajl_tree_free(st);
	}
}

/* print_table - the table without the NAMESPACE column unless -A */
static void
print_table(struct cli *c, struct table *t)
{
	if (!c->all_ns) {
		for (size_t r = 0; r < t->nrows; r++) {
			free(t->cells[r * t->ncols]);
			t->cells[r * t->ncols] = NULL;
		}
		for (size_t r = 0; r < t->nrows; r++)
			for (size_t i = 0; i + 1 < t->ncols; i++)
				t->cells[r * (t->ncols - 1) + i] = t->cells[r * t->ncols + i + 1];
		t->ncols--;
	}
	if (c->watch)
		cli_watch_table(c, t);
	else
		table_print(t, stdout);
}

/* get_endpoints - replicas registered in the store (tokens never shown) */
static int
get_endpoints(struct cli *c, const char *deployment)
{
	char *prefix;
	struct store_list l;
	struct table t;
	struct buf b;
	struct jw w;
	size_t plen;

	if (deployment)
		prefix = key_endpoint_prefix(c->ns, deployment);
	else if (c->all_ns)
		prefix = xasprintf("%s/endpoints/", keys_prefix());
	else
		prefix = xasprintf("%s/endpoints/%s/", keys_prefix(), c->ns);
	if (store_list(c->st, prefix, &l) < 0) {
		free(prefix);
		return cli_error("cannot list endpoints: %s", store_error(c->st));
	}
	free(prefix);
	plen = strlen(keys_prefix()) + strlen("/endpoints/");
	table_init(&t, 5, "NAMESPACE", "DEPLOYMENT", "ID", "URL", "STYLE");
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "apiVersion");
	jw_str(&w, "v1");
	jw_key(&w, "kind");
	jw_str(&w, "List");
	jw_key(&w, "items");
	jw_arr(&w);
	for (size_t i = 0; i < l.n; i++) {
		char ns[254] = "", dep[254] = "", id[254] = "";
		yajl_val v = json_parse(l.kvs[i].value, l.kvs[i].vlen, NULL);
		const char *url = json_get_str(v, "url", NULL);
		const char *style = json_get_str(v, "style", NULL);

		if (strlen(l.kvs[i].key) > plen)
			sscanf(l.kvs[i].key + plen, "%253[^/]/%253[^/]/%253s", ns, dep, id);
		table_row(&t, ns, dep, id, url ? url : "?", style ? style : "push");
		jw_obj(&w);
		jw_key(&w, "namespace");
		jw_str(&w, ns);
		jw_key(&w, "deploymentId");
		jw_str(&w, dep);
		jw_key(&w, "id");
		jw_str(&w, id);
		jw_key(&w, "url");
		jw_str(&w, url);
		jw_key(&w, "style");
		jw_str(&w, style ? style : "push");
		if (json_get_str(v, "tsFile", NULL)) {
			jw_key(&w, "tsFile");
			jw_str(&w, json_get_str(v, "tsFile", NULL));
		}
		jw_end_obj(&w);
		if (v)
			yajl_tree_free(v);
	}
	jw_end_arr(&w);
	jw_end_obj(&w);
	if (cli_out_tree(c)) {
		cli_print_text(c, b.data, b.len);
	} else if (l.n == 0 && c->watch < 3) {
		fprintf(stderr, "No resources found%s%s.\n", c->all_ns ? "" : " in ",
		    c->all_ns ? "" : c->ns);
	} else {
		print_table(c, &t);
	}
	buf_free(&b);
	table_free(&t);
	store_list_free(&l);
	return CLI_OK;
}

int
cli_get(struct cli *c)
{
	const char *plural = "decofiles", *name = NULL;
	struct reslist l = { NULL, 0 };
	struct table t;
	int rc = CLI_OK;

	if (c->watch == 1)
		return cli_watch(c, cli_get);
	if (c->argc >= 1) {
		const char *p = resource_kind_plural(c->argv[0]);

		if (p != NULL) {
			plural = p;
			name = c->argc == 2 ? c->argv[1] : NULL;
		} else if (c->argc == 2) {
			return cli_usage_error(c, "unknown kind \"%s\" (decofile, template, tenant, "
			    "endpoint)", c->argv[0]);
		} else {
			name = c->argv[0];
		}
	}
	if (cli_store(c) == NULL)
		return CLI_FAIL;
	if (strcmp(plural, "endpoints") == 0)
		return get_endpoints(c, name);
	if (name != NULL) {
		yajl_val doc = NULL;
		char err[512];
		int got = resource_get(c->st, plural, c->ns, name, &doc, err, sizeof(err));

		if (got < 0)
			return cli_error("%s", err);
		if (got == 1)
			return cli_not_found(plural, name);
		l.v = xmalloc(sizeof(*l.v));
		l.v[0] = doc;
		l.n = 1;
	} else if (list_resources(c, plural, &l) < 0) {
		return CLI_FAIL;
	}
	if (c->out == OUT_NAME) {
		for (size_t i = 0; i < l.n; i++)
			printf("%s/%s\n", cli_kind_singular(plural), meta(l.v[i], "name"));
	} else if (cli_out_tree(c)) {
		struct buf b;
		struct jw w;

		buf_init(&b);
		jw_init(&w, &b);
		if (name == NULL) {
			jw_obj(&w);
			jw_key(&w, "apiVersion");
			jw_str(&w, "v1");
			jw_key(&w, "kind");
			jw_str(&w, "List");
			jw_key(&w, "items");
			jw_arr(&w);
		}
		for (size_t i = 0; i < l.n; i++) {
			yajl_val full = cli_resource_with_status(c, plural, l.v[i]);

			if (full == NULL) {
				rc = CLI_FAIL;
				continue;
			}
			jw_value(&w, full);
			yajl_tree_free(full);
		}
		if (name == NULL) {
			jw_end_arr(&w);
			jw_end_obj(&w);
		}
		if (cli_print_text(c, b.data, b.len) != CLI_OK)
			rc = CLI_FAIL;
		buf_free(&b);
	} else if (l.n == 0) {
		if (c->watch < 3)
			fprintf(stderr, "No resources found%s%s.\n", c->all_ns ? "" : " in ",
			    c->all_ns ? "" : c->ns);
	} else {
		get_table_header(c, plural, &t);
		for (size_t i = 0; i < l.n; i++)
			get_table_row(c, plural, l.v[i], &t);
		print_table(c, &t);
		table_free(&t);
	}
	reslist_free(&l);
	return rc;
}

/* --- status ----------------------------------------------------------- */

void
cli_status_message(yajl_val st, char *out, size_t len)
{
	view_status_message(st, out, len);
}

/* publish_age - time since status.timestamp (unix s), else lastUpdated */
static void
publish_age(yajl_val st, char *out, size_t len)
{
	int64_t ts = json_get_int(st, 0, "timestamp", NULL);

	if (ts > 0)
		cli_age(wall_ms() - ts * 1000, out, len);
	else
		cli_age_since(json_get_str(st, "lastUpdated", NULL), out, len);
}

int
cli_status(struct cli *c)
{
	struct reslist l = { NULL, 0 };
	struct journal *j;
	struct table t;
	struct buf b;
	struct jw w;
	int rc = CLI_OK;

	if (c->watch == 1)
		return cli_watch(c, cli_status);
	if (cli_store(c) == NULL)
		return CLI_FAIL;
	j = cli_journal_open(c, 1);	/* the replicas' counts where there is one */
	if (c->argc == 1) {
		yajl_val doc = NULL;
		char err[512];
		int got = resource_get(c->st, "decofiles", c->ns, c->argv[0], &doc, err,
		    sizeof(err));

		if (got < 0)
			return cli_error("%s", err);
		if (got == 1)
			return cli_not_found("decofiles", c->argv[0]);
		l.v = xmalloc(sizeof(*l.v));
		l.v[0] = doc;
		l.n = 1;
	} else if (list_resources(c, "decofiles", &l) < 0) {
		return CLI_FAIL;
	}
	table_init(&t, 14, "NAMESPACE", "NAME", "SOURCE", "COMMIT", "HASH", "TARGET",
	    "SUSPENDED", "READY", "SYNCING", "PODSNOTIFIED", "PUBLISHED", "AGE", "OWNER",
	    "MESSAGE");
	buf_init(&b);
	jw_init(&w, &b);
	jw_arr(&w);
	for (size_t i = 0; i < l.n; i++) {
		struct view_row r;
		char published[32], age[32];

		view_row(c->st, j, l.v[i], conf_get(c->cf, "default_target"), &r);
		publish_age(r.st, published, sizeof(published));
		cli_age_since(r.created_at, age, sizeof(age));
		table_row(&t, r.ns, r.name, r.source, cli_short(r.commit, 7),
		    cli_short(r.hash, 12), r.target, r.suspended ? "True" : "False", r.ready,
		    r.syncing, r.pods_notified, published, age, r.owner ? r.owner : "-",
		    r.message[0] ? r.message : "-");
		view_row_json(&r, &w);
		view_row_free(&r);
	}
	jw_end_arr(&w);
	if (cli_out_tree(c))
		rc = cli_print_text(c, b.data, b.len);
	else if (l.n == 0 && c->watch < 3)
		fprintf(stderr, "No decofiles found%s%s.\n", c->all_ns ? "" : " in ",
		    c->all_ns ? "" : c->ns);
	else if (c->watch)
		cli_watch_table(c, &t);
	else if (l.n > 0)
		table_print(&t, stdout);
	buf_free(&b);
	table_free(&t);
	reslist_free(&l);
	return rc;
}

/* --- describe --------------------------------------------------------- */

/* what describe_replicas fills (describe -o json is common/view.c's) */
struct replicas {
	const char *hash;	/* the current content hash, or NULL */
	struct table *t;
	int on_current, total;
};

static void
replica_row(void *arg, const struct journal_ack_row *r)
{
	struct replicas *x = arg;
	int current = x->hash != NULL && strcmp(r->content_hash, x->hash) == 0 &&
	    r->confirmed;
	char when[40], hs[40];

	x->total++;
	if (current)
		x->on_current++;
	cli_sql_time(r->at, when, sizeof(when));
	snprintf(hs, sizeof(hs), "%s%s", cli_short(r->content_hash, 12),
	    x->hash != NULL && strcmp(r->content_hash, x->hash) != 0 ? " (old)" : "");
	table_row(x->t, r->replica, hs, r->result, when);
}

static void
inventory_row(void *arg, const struct journal_inventory_row *r)
{
	char when[40];

	cli_sql_time(r->updated_at, when, sizeof(when));
	table_row(arg, r->target, r->location, cli_short(r->content_hash, 12), when);
}

static void
field(const char *label, const char *value)
{
	printf("%-21s%s\n", label, value && *value ? value : "-");
}

static void
print_indented(struct table *t)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (f == NULL)
		return;
	table_print(t, f);
	fclose(f);
	for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		printf("  %.*s\n", nl ? (int)(nl - line) : (int)strlen(line), line);
	}
	free(text);
}

int
cli_describe(struct cli *c)
{
	const char *name = c->argv[0], *ns = c->ns, *hash;
	yajl_val doc = NULL, full, st, conds, tmpl;
	struct table tc, tr, ti, th;
	struct buf hb, b;
	struct jw hw, w;
	struct journal *j;
	char err[512], buf[64];
	int got, on_current = 0, total = 0, rc = CLI_OK;

	if (cli_store(c) == NULL)
		return CLI_FAIL;
	got = resource_get(c->st, "decofiles", ns, name, &doc, err, sizeof(err));
	if (got < 0)
		return cli_error("%s", err);
	if (got == 1)
		return cli_not_found("decofiles", name);
	if ((full = cli_resource_with_status(c, "decofiles", doc)) == NULL) {
		yajl_tree_free(doc);
		return CLI_FAIL;
	}
	st = json_get(full, "status", NULL);
	hash = json_get_str(st, "contentHash", NULL);
	j = cli_journal_open(c, 1);
	table_init(&tr, 4, "REPLICA", "HASH", "RESULT", "CONFIRMED");
	table_init(&ti, 4, "TARGET", "LOCATION", "HASH", "UPDATED");
	table_init(&th, 3, "TIME", "EVENT", "DETAIL");
	buf_init(&hb);	/* cli_history_rows fills a table and JSON; the table is used */
	jw_init(&hw, &hb);
	jw_arr(&hw);
	if (c->out == OUT_JSON || c->out == OUT_YAML) {
		buf_init(&b);
		jw_init(&w, &b);
		if (view_describe_json(c->st, j, doc, 10, &w) < 0)
			rc = cli_error("internal error: cannot re-read decofiles/%s", name);
		else
			rc = cli_print_text(c, b.data, b.len);
		buf_free(&b);
		goto out;
	}
	if (j != NULL) {
		struct replicas x = { hash, &tr, 0, 0 };

		(void)journal_acks_each(j, ns, name, replica_row, &x);
		on_current = x.on_current;
		total = x.total;
		(void)journal_inventory_each(j, NULL, ns, name, inventory_row, &ti);
		cli_history_rows(j, ns, name, 10, &th, &hw);
	}
	jw_end_arr(&hw);
	field("Name:", name);
	field("Namespace:", ns);
	field("Kind:", "Decofile");
	snprintf(buf, sizeof(buf), "%lld", (long long)json_get_int(doc, 0, "metadata",
	    "generation", NULL));
	field("Generation:", buf);
	field("Created:", json_get_str(doc, "metadata", "created_at", NULL));
	field("Updated:", json_get_str(doc, "metadata", "updated_at", NULL));
	field("Source:", decofile_source(doc));
	field("Deployment:", decofile_deployment_id(doc));
	field("Target:", decofile_target(doc, conf_get(c->cf, "default_target")));
	if (YAJL_IS_ARRAY(tmpl = json_get(doc, "spec", "templates", NULL))) {
		struct buf tb;

		buf_init(&tb);
		buf_adds(&tb, "");
		for (size_t i = 0; i < tmpl->u.array.len; i++)
			if (YAJL_IS_STRING(tmpl->u.array.values[i]))
				buf_printf(&tb, "%s%s", i ? ", " : "",
				    YAJL_GET_STRING(tmpl->u.array.values[i]));
		field("Templates:", tb.data);
		buf_free(&tb);
	}
	field("Commit:", json_get_str(st, "githubCommit", NULL));
	field("Content Hash:", hash);
	field("Format:", json_get_str(st, "format", NULL));
	if (json_get_int(st, 0, "timestamp", NULL) > 0) {
		char when[40];

		rfc3339_from(json_get_int(st, 0, "timestamp", NULL), when, sizeof(when));
		snprintf(buf, sizeof(buf), "%s (timestamp %lld)", when,
		    (long long)json_get_int(st, 0, "timestamp", NULL));
		field("Published:", buf);
	} else {
		field("Published:", NULL);
	}
	field("Location:", json_get_str(st, "location", NULL));
	if (json_get_str(st, "s3URL", NULL))
		field("S3 URL:", json_get_str(st, "s3URL", NULL));
	if (json_get_str(st, "configMapName", NULL))
		field("ConfigMap:", json_get_str(st, "configMapName", NULL));
	snprintf(buf, sizeof(buf), "%lld", (long long)json_get_int(st, 0,
	    "observedGeneration", NULL));
	field("Observed Generation:", json_get(st, "observedGeneration", NULL) ? buf : NULL);
	printf("Conditions:\n");
	conds = json_get(st, "conditions", NULL);
	if (YAJL_IS_ARRAY(conds) && conds->u.array.len > 0) {
		table_init(&tc, 5, "TYPE", "STATUS", "REASON", "LAST TRANSITION", "MESSAGE");
		for (size_t i = 0; i < conds->u.array.len; i++) {
			yajl_val cv = conds->u.array.values[i];

			table_row(&tc, json_get_str(cv, "type", NULL),
			    json_get_str(cv, "status", NULL), json_get_str(cv, "reason", NULL),
			    json_get_str(cv, "lastTransitionTime", NULL),
			    json_get_str(cv, "message", NULL));
		}
		print_indented(&tc);
		table_free(&tc);
	} else {
		printf("  <none>\n");
	}
	if (j == NULL) {
		printf("Replicas:\n  <no journal on this host>\n");
		goto out;
	}
	printf("Replicas:\n");
	if (tr.nrows > 1) {
		print_indented(&tr);
		printf("  %d of %d replicas confirmed the current hash\n", on_current, total);
	} else {
		printf("  <none confirmed yet>\n");
	}
	printf("Inventory:\n");
	if (ti.nrows > 1)
		print_indented(&ti);
	else
		printf("  <none>\n");
	printf("Events (newest 10):\n");
	if (th.nrows > 1)
		print_indented(&th);
	else
		printf("  <none>\n");
out:
	table_free(&tr);
	table_free(&ti);
	table_free(&th);
	buf_free(&hb);
	yajl_tree_free(full);
	yajl_tree_free(doc);
	return rc;
}

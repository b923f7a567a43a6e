/*
 * resource_fields_test - the spec fields decoctl apply --strict knows
 * (common/resource.c) against the CRDs in deploy/ and doc/sources.md: every
 * property of a CRD's spec schema is in the kind's list and every listed
 * field is in the schema, each field alone passes resource_unknown_fields,
 * and each source field the doc names (`spec.git: {url, ref, ...}`) is known.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/resource.h"
#include "common/util.h"
#include "common/yaml.h"
#include "t/tap.h"

#define MAXF 128

struct fields {
	char *v[MAXF];
	int n;
};

static void
add(struct fields *f, const char *path)
{
	if (f->n < MAXF)
		f->v[f->n++] = xstrdup(path);
}

static int
has(const struct fields *f, const char *path)
{
	for (int i = 0; i < f->n; i++)
		if (strcmp(f->v[i], path) == 0)
			return 1;
	return 0;
}

static int
listed(const char *const *list, const char *path)
{
	for (int i = 0; list[i] != NULL; i++)
		if (strcmp(list[i], path) == 0)
			return 1;
	return 0;
}

/* schema_walk - a schema's properties as dotted paths, "p.*" for free members */
static void
schema_walk(yajl_val schema, const char *prefix, struct fields *f)
{
	yajl_val props = json_get(schema, "properties", NULL);

	for (size_t i = 0; props != NULL && YAJL_IS_OBJECT(props) && i < props->u.object.len; i++) {
		yajl_val s = props->u.object.values[i];
		const char *type = json_get_str(s, "type", NULL);
		char path[256], star[260];

		snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "",
		    props->u.object.keys[i]);
		add(f, path);
		snprintf(star, sizeof(star), "%s.*", path);
		/* an object whose members are free (an array's items are not walked) */
		if (type != NULL && strcmp(type, "object") == 0 &&
		    (YAJL_IS_TRUE(json_get(s, "x-kubernetes-preserve-unknown-fields", NULL)) ||
		    json_get(s, "additionalProperties", NULL) != NULL))
			add(f, star);
		schema_walk(s, path, f);
	}
}

/* crd_spec_fields - the spec properties of a CRD file's first version */
static int
crd_spec_fields(const char *file, struct fields *f)
{
	static const struct yaml_opts opts = { RESOURCE_MAX_SIZE, 0 };
	const char *top = getenv("top_srcdir");
	char path[1024];
	struct yaml_docs docs = { NULL, 0 };
	struct yaml_error e;
	yajl_val crd, versions, spec;
	char *text;
	size_t len;
	int rc = -1;

	snprintf(path, sizeof(path), "%s/%s", top ? top : "..", file);
	if ((text = read_file(path, &len, 1 << 20)) == NULL)
		return -1;
	if (yaml_to_json_docs(text, len, &opts, &docs, &e) == 0 && docs.n == 1 &&
	    (crd = json_parse(docs.v[0].json, strlen(docs.v[0].json), NULL)) != NULL) {
		versions = json_get(crd, "spec", "versions", NULL);
		if (versions != NULL && YAJL_IS_ARRAY(versions) && versions->u.array.len > 0) {
			spec = json_get(versions->u.array.values[0], "schema", "openAPIV3Schema",
			    "properties", "spec", NULL);
			if (spec != NULL) {
				schema_walk(spec, "", f);
				rc = 0;
			}
		}
		yajl_tree_free(crd);
	}
	yaml_docs_free(&docs);
	free(text);
	return rc;
}

/* alone_known - a document of kind holding only path passes the --strict check */
static int
alone_known(const char *kind, const char *path)
{
	struct buf j, unk;
	const char *p, *dot;
	int depth = 0, n;
	yajl_val doc;

	buf_init(&j);
	buf_printf(&j, "{\"kind\":\"%s\",\"spec\":", kind);
	for (p = path; (dot = strchr(p, '.')) != NULL; p = dot + 1, depth++)
		buf_printf(&j, "{\"%.*s\":", (int)(dot - p), p);
	buf_printf(&j, "{\"%s\":\"x\"}", strcmp(p, "*") == 0 ? "Página Institucional" : p);
	while (depth-- > 0)
		buf_addc(&j, '}');
	buf_addc(&j, '}');
	doc = json_parse(j.data, j.len, NULL);
	buf_free(&j);
	if (doc == NULL)
		return 0;
	buf_init(&unk);
	n = resource_unknown_fields(doc, &unk);
	if (n != 0)
		diag("%s: %s", path, unk.data);
	buf_free(&unk);
	yajl_tree_free(doc);
	return n == 0;
}

/* compare - the CRD file's spec fields and the kind's list, both ways */
static void
compare(const char *file, const char *plural, const char *kind)
{
	const char *const *list = resource_spec_fields(plural);
	struct fields crd = { { NULL }, 0 };
	int missing = 0, rc;

	rc = crd_spec_fields(file, &crd);
	ok(rc == 0 && crd.n > 0, "%s: spec schema read (%d fields)", file, crd.n);
	for (int i = 0; i < crd.n; i++) {
		if (!listed(list, crd.v[i])) {
			diag("%s: spec.%s is not in resource.c's %s list", file, crd.v[i], plural);
			missing++;
		}
		if (strcmp(crd.v[i] + strlen(crd.v[i]) - 1, "*") != 0 &&
		    !alone_known(kind, crd.v[i])) {
			diag("%s: spec.%s alone is refused by --strict", file, crd.v[i]);
			missing++;
		}
	}
	is_int(missing, 0, "%s: every spec field of the CRD is known to decoctl apply --strict",
	    file);
	missing = 0;
	for (int i = 0; list[i] != NULL; i++)
		if (!has(&crd, list[i])) {
			diag("resource.c's %s list has spec.%s, %s does not", plural, list[i], file);
			missing++;
		}
	is_int(missing, 0, "%s: every field resource.c lists for %s is in the CRD", file, kind);
	for (int i = 0; i < crd.n; i++)
		free(crd.v[i]);
}

/*
 * doc_fields - the spec fields doc/sources.md names: `spec.a.b` and
 * `spec.a: {b, c}` (a and each of b, c)
 */
static void
doc_fields(const char *text, struct fields *f)
{
	const char *p = text, *end;

	while ((p = strstr(p, "`spec.")) != NULL) {
		char in[256], base[128], path[256];
		char *brace, *tok, *save;

		p += 6;
		if ((end = strchr(p, '`')) == NULL || end - p >= (ptrdiff_t)sizeof(in))
			continue;
		snprintf(in, sizeof(in), "%.*s", (int)(end - p), p);
		if ((brace = strstr(in, ": {")) == NULL) {
			if (strspn(in, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.") ==
			    strlen(in))
				add(f, in);
			continue;
		}
		snprintf(base, sizeof(base), "%.*s", (int)(brace - in), in);
		add(f, base);
		brace[strcspn(brace, "}")] = '\0';
		for (tok = strtok_r(brace + 3, ", ", &save); tok != NULL;
		    tok = strtok_r(NULL, ", ", &save)) {
			snprintf(path, sizeof(path), "%s.%s", base, tok);
			add(f, path);
		}
	}
}

int
main(void)
{
	const char *top = getenv("top_srcdir");
	struct fields doc = { { NULL }, 0 };
	char path[1024];
	char *text;
	size_t len;
	int bad = 0;

	compare("deploy/crd-decofile.yaml", "decofiles", "Decofile");
	compare("deploy/crd-decofiletemplate.yaml", "templates", "DecofileTemplate");

	/* the fields of the defects of issue 24 by name */
	ok(alone_known("Decofile", "github.period"), "spec.github.period passes --strict");
	ok(alone_known("DecofileTemplate", "github.period"),
	    "... for a DecofileTemplate too");
	ok(alone_known("Decofile", "tanstackKV.kvNamespaceId") &&
	    alone_known("Decofile", "tanstackKV.siteOrigin"),
	    "spec.tanstackKV {kvNamespaceId, siteOrigin} passes --strict");
	ok(!alone_known("Decofile", "targett"), "an unknown field still does not");
	ok(!alone_known("Decofile", "tanstackKV.kvNamespaceID"),
	    "... nor a misspelt member of tanstackKV");

	snprintf(path, sizeof(path), "%s/doc/sources.md", top ? top : "..");
	text = read_file(path, &len, 1 << 20);
	ok(text != NULL, "doc/sources.md read");
	if (text != NULL)
		doc_fields(text, &doc);
	ok(has(&doc, "github.period") && has(&doc, "git.url") && doc.n >= 10,
	    "doc/sources.md names %d spec fields (github.period among them)", doc.n);
	for (int i = 0; i < doc.n; i++) {
		if (!alone_known("Decofile", doc.v[i]) ||
		    !alone_known("DecofileTemplate", doc.v[i])) {
			diag("doc/sources.md documents spec.%s, which --strict refuses", doc.v[i]);
			bad++;
		}
		free(doc.v[i]);
	}
	is_int(bad, 0, "every spec field doc/sources.md documents passes --strict");
	free(text);
	return done_testing();
}

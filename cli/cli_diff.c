/*
 * cli_diff - decoctl diff: what an apply of a file would change, with
 * nothing written to the store, the journal or decod's spool.  Each
 * resource as stored (live) against as the file has it (merged); for a
 * Decofile with an inline or dir source also its rendered document, block
 * by block: the source is read by the fetcher's own code into a private
 * spool in a temporary folder, merged by the renderer's own code with the
 * templates' last fetched trees, and compared with the last rendered
 * document in decod's spool.  Text diffs are diff(1)'s, as kubectl diff's
 * are.  (diff NAME, the preview of what is pending, is cli_diff_name.c.)  Owns the temporary folder, removed before it returns.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_yaml.h"
#include "common/conf.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/resource.h"
#include "common/spool.h"
#include "daemons/fetcher/fetch_dir.h"
#include "daemons/fetcher/fetch_inline.h"
#include "daemons/renderer/render_merge.h"
#include "daemons/renderer/render_tree.h"

/* exit codes, as kubectl diff's */
#define DIFF_SAME 0
#define DIFF_CHANGED 1
#define DIFF_ERROR 2

struct diff {
	struct cli *c;
	const char *fname;	/* what messages name */
	char *tmp;		/* private temporary folder */
	struct spool *sp;	/* decod's spool; NULL: none (yet) */
	unsigned seq;		/* next pair of files in tmp */
};

/* write_text - len bytes of text (NULL: an empty file) to path; 0 or -1 */
static int
write_text(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");
	int rc = 0;

	if (f == NULL)
		return -1;
	if (text != NULL && fwrite(text, 1, len, f) != len)
		rc = -1;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

/* write_value - v as YAML (yaml) or indented JSON to path; 0 or -1 */
static int
write_value(const char *path, yajl_val v, int yaml)
{
	FILE *f = fopen(path, "w");
	int rc;

	if (f == NULL)
		return -1;
	rc = yaml ? cli_print_yaml(f, v) : cli_print_json(f, v);
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

/*
 * run_diff - diff -u of the pair of files d->tmp/{live,merged}.<seq>, with
 * labels, onto standard output.  DIFF_SAME, DIFF_CHANGED, or DIFF_ERROR
 * after printing why.
 */
static int
run_diff(struct diff *d, const char *live_label, const char *merged_label)
{
	char *a = xasprintf("%s/live.%u", d->tmp, d->seq);
	char *b = xasprintf("%s/merged.%u", d->tmp, d->seq);
	int status, rc = DIFF_ERROR;
	pid_t pid;

	d->seq++;
	fflush(stdout);
	if ((pid = fork()) < 0) {
		cli_error("cannot run diff: %s", strerror(errno));
	} else if (pid == 0) {
		execlp("diff", "diff", "-u", "-N", "--label", live_label, "--label",
		    merged_label, a, b, (char *)NULL);
		fprintf(stderr, "error: cannot run diff(1): %s (decoctl diff needs it on "
		    "PATH, as kubectl diff does)\n", strerror(errno));
		_exit(127);
	} else if (waitpid(pid, &status, 0) < 0) {
		cli_error("waiting for diff: %s", strerror(errno));
	} else if (WIFEXITED(status) && WEXITSTATUS(status) <= 1) {
		rc = WEXITSTATUS(status) == 0 ? DIFF_SAME : DIFF_CHANGED;
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 127) {
		cli_error("diff failed comparing %s and %s", live_label, merged_label);
	}
	free(a);
	free(b);
	return rc;
}

/* pair_path - the path of side ("live"/"merged") of the next pair */
static char *
pair_path(struct diff *d, const char *side)
{
	return xasprintf("%s/%s.%u", d->tmp, side, d->seq);
}

/*
 * object_view - what diff shows of a resource: apiVersion, kind, name,
 * namespace, labels, annotations and spec (not status, generation or
 * times, which an apply does not set), credentials in URLs masked.  A new
 * tree.
 */
static yajl_val
object_view(yajl_val doc, const char *plural, const char *ns, const char *name)
{
	const char *api = json_get_str(doc, "apiVersion", NULL);
	yajl_val v;
	struct buf b;
	struct jw w;

	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "apiVersion");
	jw_str(&w, api ? api : "");
	jw_key(&w, "kind");
	jw_str(&w, resource_kind_name(plural));
	jw_key(&w, "metadata");
	jw_obj(&w);
	jw_key(&w, "name");
	jw_str(&w, name);
	jw_key(&w, "namespace");
	jw_str(&w, ns);
	if (YAJL_IS_OBJECT(v = json_get(doc, "metadata", "labels", NULL))) {
		jw_key(&w, "labels");
		jw_value(&w, v);
	}
	if (YAJL_IS_OBJECT(v = json_get(doc, "metadata", "annotations", NULL))) {
		jw_key(&w, "annotations");
		jw_value(&w, v);
	}
	jw_end_obj(&w);
	if ((v = json_get(doc, "spec", NULL)) != NULL) {
		jw_key(&w, "spec");
		jw_value(&w, v);
	}
	jw_end_obj(&w);
	v = json_parse(b.data, b.len, NULL);
	buf_free(&b);
	cli_redact(v);	/* a record stored before apply refused credentials */
	return v;
}

/* diff_object - the resource as stored against as the file has it */
static int
diff_object(struct diff *d, yajl_val old, yajl_val doc, const char *plural,
    const char *ns, const char *name)
{
	yajl_val nv = object_view(doc, plural, ns, name);
	yajl_val ov = old ? object_view(old, plural, ns, name) : NULL;
	char *a = pair_path(d, "live"), *b = pair_path(d, "merged");
	char *la = xasprintf("%s/%s (live)", cli_kind_singular(plural), name);
	char *lb = xasprintf("%s/%s (merged)", cli_kind_singular(plural), name);
	int rc = DIFF_ERROR;

	if (nv == NULL || (old != NULL && ov == NULL))
		cli_error("internal error: cannot re-read %s/%s", plural, name);
	else if ((ov ? write_value(a, ov, 1) : write_text(a, NULL, 0)) < 0 ||
	    write_value(b, nv, 1) < 0)
		cli_error("cannot write into %s: %s", d->tmp, strerror(errno));
	else
		rc = run_diff(d, la, lb);
	if (ov)
		yajl_tree_free(ov);
	if (nv)
		yajl_tree_free(nv);
	free(a);
	free(b);
	free(la);
	free(lb);
	return rc;
}

/*
 * source_tree - read the Decofile's inline or dir source into a private
 * spool, as the fetcher would, and load it back as merge inputs.  0, or
 * DIFF_ERROR after printing why.
 */
static int
source_tree(struct diff *d, yajl_val doc, const char *name, int line,
    struct spool **psp, struct render_tree *t)
{
	const char *source = decofile_source(doc);
	struct fetch_limits lim = { 0 };	/* defer_sync 0: the blobs synced as written */
	struct fetch_result res;
	char *dir = xasprintf("%s/spool", d->tmp), why[1200];
	int missing, rv;

	memset(&res, 0, sizeof(res));
	lim.max_tree = conf_get_size(d->c->cf, "max_tree_size");
	lim.max_file = lim.max_tree;
	*psp = spool_open(dir);
	free(dir);
	if (*psp == NULL)
		return cli_error("cannot make a spool in %s: %s", d->tmp, strerror(errno)),
		    DIFF_ERROR;
	if (strcmp(source, "inline") == 0)
		rv = fetch_inline(*psp, &lim, json_get(doc, "spec", "inline", "value", NULL),
		    &res);
	else
		rv = fetch_dir(*psp, &lim, json_get_str(doc, "spec", "dir", "path", NULL),
		    &res);
	if (rv < 0) {
		cli_error("%s:%d: decofile/%s: the source would not fetch: %s (%s)", d->fname,
		    line, name, res.error, res.reason ? res.reason : "FetchError");
		return DIFF_ERROR;
	}
	if (render_tree_load(*psp, res.tree_hash, RENDER_LAYER_OWN, t, &missing, why,
	    sizeof(why)) < 0) {
		cli_error("decofile/%s: cannot read back its blocks: %s", name, why);
		return DIFF_ERROR;
	}
	return 0;
}

/* decod_spool - decod's spool, opened once if it exists (never created) */
static struct spool *
decod_spool(struct diff *d)
{
	char *dir;

	if (d->sp != NULL)
		return d->sp;
	dir = xasprintf("%s/spool", conf_get(d->c->cf, "state_dir"));
	if (access(dir, R_OK | X_OK) == 0)
		d->sp = spool_open(dir);
	free(dir);
	return d->sp;
}

/*
 * last_rendered - the last rendered document of ns/name into *out ("{}"
 * when there is none yet).  0, or DIFF_ERROR after printing why.
 */
static int
last_rendered(struct diff *d, const char *ns, const char *name, char **out, size_t *len)
{
	struct journal *j = cli_journal_open(d->c, 1);
	char hash[65], format[8];
	int rv;

	if (j == NULL || (rv = journal_last_render(j, ns, name, hash, format, NULL)) == 1) {
		*out = xstrdup("{}");
		*len = 2;
		return 0;
	}
	if (rv < 0)
		return cli_error("cannot read the journal: %s", journal_error(j)), DIFF_ERROR;
	if (decod_spool(d) == NULL || (*out = spool_get(d->sp, hash, len)) == NULL)
		return cli_error("decofile/%s: its last rendered document %s is not in decod's "
		    "spool (%s/spool): %s", name, hash, conf_get(d->c->cf, "state_dir"),
		    strerror(d->sp ? errno : ENOENT)), DIFF_ERROR;
	return 0;
}

/*
 * template_trees - the newest generation's tree of each template doc lists, on
 * layers 0..n-1, into t.  The count, or -1: with *err set after printing
 * an error, or *err 0 after a warning that a template has not been fetched
 * (the renderer would wait for it: there is nothing to compare).
 */
static int
template_trees(struct diff *d, yajl_val doc, const char *ns, const char *name,
    struct render_tree *t, int *err)
{
	static char names[RENDER_MAX_TEMPLATES][254];
	struct journal *j;
	char why[1200], th[65];
	int n, missing, rv;
	int64_t gen;

	*err = 0;
	if ((n = render_template_names(doc, names, RENDER_MAX_TEMPLATES, why,
	    sizeof(why))) < 0) {
		*err = cli_error("decofile/%s: %s", name, why);
		return -1;
	}
	j = n > 0 ? cli_journal_open(d->c, 1) : NULL;
	for (int i = 0; i < n; i++) {
		if (j == NULL || (rv = journal_template_newest(j, ns, names[i], &gen, th)) == 1) {
			fprintf(stderr, "Warning: decofile/%s: DecofileTemplate '%s' has not been "
			    "fetched yet; its rendered document cannot be compared\n", name,
			    names[i]);
			goto fail;
		}
		if (rv < 0) {
			*err = cli_error("cannot read the journal: %s", journal_error(j));
			goto fail;
		}
		if (decod_spool(d) == NULL || render_tree_load(d->sp, th, i, &t[i], &missing,
		    why, sizeof(why)) < 0) {
			*err = cli_error("decofile/%s: DecofileTemplate '%s': %s", name, names[i],
			    d->sp ? why : "decod's spool does not exist");
			goto fail;
		}
		continue;
fail:
		while (i-- > 0)
			render_tree_free(&t[i]);
		return -1;
	}
	return n;
}

/* block_cmp - order block indexes by key bytes (the merge's own order) */
static int
block_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* sorted_keys - the keys of object v, sorted; caller frees the array */
static const char **
sorted_keys(yajl_val v, size_t *n)
{
	const char **k = xcalloc(v->u.object.len + 1, sizeof(*k));

	for (size_t i = 0; i < v->u.object.len; i++)
		k[i] = v->u.object.keys[i];
	qsort(k, v->u.object.len, sizeof(*k), block_cmp);
	*n = v->u.object.len;
	return k;
}

/* compact - v's compact JSON, malloc'd */
static char *
compact(yajl_val v)
{
	struct buf b;
	struct jw w;

	buf_init(&b);
	jw_init(&w, &b);
	jw_value(&w, v);
	buf_adds(&b, "");
	return buf_steal(&b, NULL);
}

/*
 * diff_blocks - old and new rendered documents block by block: one line
 * per added, removed or changed block, then diff -u of each changed one.
 */
static int
diff_blocks(struct diff *d, const char *name, const char *old, size_t oldlen,
    const char *new, size_t newlen)
{
	struct json_error je;
	yajl_val ov = json_parse(old, oldlen, &je), nv = json_parse(new, newlen, &je);
	const char **ok = NULL, **nk = NULL;
	size_t on = 0, nn = 0, i = 0, k = 0, nch = 0;
	char shown[1100];
	int rc = DIFF_SAME, pass;

	if (!YAJL_IS_OBJECT(ov) || !YAJL_IS_OBJECT(nv)) {
		cli_error("decofile/%s: a rendered document is not a JSON object", name);
		rc = DIFF_ERROR;
		goto out;
	}
	ok = sorted_keys(ov, &on);
	nk = sorted_keys(nv, &nn);
	/* pass 0: the list of blocks; pass 1: a diff of each changed one */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0, k = 0; i < on || k < nn;) {
			int c = i == on ? 1 : k == nn ? -1 : strcmp(ok[i], nk[k]);
			const char *key = c <= 0 ? ok[i] : nk[k];
			yajl_val a = c <= 0 ? json_get(ov, ok[i], NULL) : NULL;
			yajl_val b = c >= 0 ? json_get(nv, nk[k], NULL) : NULL;
			char *ca = a ? compact(a) : NULL, *cb = b ? compact(b) : NULL;
			int same = ca && cb && strcmp(ca, cb) == 0;

			free(ca);
			free(cb);
			str_show(key, shown, sizeof(shown));
			if (pass == 0 && !same) {
				if (nch++ == 0)
					printf("decofile/%s rendered document:\n", name);
				printf("  %s block \"%s\" %s\n", !a ? "+" : !b ? "-" : "~", shown,
				    !a ? "added" : !b ? "removed" : "changed");
			} else if (pass == 1 && a && b && !same) {
				char *pa = pair_path(d, "live"), *pb = pair_path(d, "merged");
				char *la = xasprintf("decofile/%s block \"%s\" (live)", name, shown);
				char *lb = xasprintf("decofile/%s block \"%s\" (merged)", name, shown);
				int r = DIFF_ERROR;

				if (write_value(pa, a, 0) < 0 || write_value(pb, b, 0) < 0)
					cli_error("cannot write into %s: %s", d->tmp, strerror(errno));
				else
					r = run_diff(d, la, lb);
				free(pa);
				free(pb);
				free(la);
				free(lb);
				if (r == DIFF_ERROR) {
					rc = DIFF_ERROR;
					goto out;
				}
			}
			i += c <= 0;
			k += c >= 0;
		}
	}
	if (nch > 0)
		rc = DIFF_CHANGED;
out:
	free(ok);
	free(nk);
	yajl_tree_free(ov);
	yajl_tree_free(nv);
	return rc;
}

/*
 * diff_rendered - for a Decofile with an inline or dir source: what its
 * rendered document would become, against the last one rendered
 */
static int
diff_rendered(struct diff *d, yajl_val doc, const char *ns, const char *name, int line)
{
	const char *source = decofile_source(doc);
	struct render_tree trees[RENDER_MAX_TEMPLATES + 1];
	struct render_input *all = NULL;
	struct render_error e;
	struct spool *psp = NULL;
	struct buf json;
	char hash[65], *old = NULL;
	size_t ntrees = 0, nall = 0, oldlen = 0;
	int n, rc = DIFF_ERROR, err;

	if (strcmp(source, "inline") != 0 && strcmp(source, "dir") != 0)
		return DIFF_SAME;
	if ((n = template_trees(d, doc, ns, name, trees, &err)) < 0)
		return err ? DIFF_ERROR : DIFF_SAME;
	buf_init(&json);
	ntrees = (size_t)n;
	if (source_tree(d, doc, name, line, &psp, &trees[ntrees]) != 0)
		goto out;
	ntrees++;
	for (size_t i = 0; i < ntrees; i++)
		nall += trees[i].n;
	all = xcalloc(nall ? nall : 1, sizeof(*all));
	nall = 0;
	for (size_t i = 0; i < ntrees; i++) {
		memcpy(all + nall, trees[i].in, trees[i].n * sizeof(*all));
		nall += trees[i].n;
	}
	if (render_merge(all, nall, &json, hash, &e) < 0) {
		cli_error("%s:%d: decofile/%s would not render (ValidationError; the last "
		    "good version would stay live): %s", d->fname, line, name, e.msg);
		goto out;
	}
	if (last_rendered(d, ns, name, &old, &oldlen) != 0)
		goto out;
	rc = diff_blocks(d, name, old, oldlen, json.data, json.len);
out:
	free(old);
	free(all);
	for (size_t i = 0; i < ntrees; i++)
		render_tree_free(&trees[i]);
	spool_close(psp);
	buf_free(&json);
	return rc;
}

/* diff_one - one document of the file; DIFF_SAME, DIFF_CHANGED or DIFF_ERROR */
static int
diff_one(struct diff *d, const struct yaml_doc *cd, int idx)
{
	struct cli *c = d->c;
	const char *plural, *ns, *name;
	yajl_val doc, old = NULL;
	char err[512];
	int changed = 0, had, rc = DIFF_ERROR, r2;

	if ((doc = cli_apply_doc(c, d->fname, cd, idx, &plural, &ns, &name)) == NULL)
		return DIFF_ERROR;
	if ((had = resource_get(c->st, plural, ns, name, &old, err, sizeof(err))) < 0) {
		cli_error("%s:%d: %s", d->fname, cd->line, err);
		goto out;
	}
	if (resource_put_check(c->st, doc, c->ns, &changed, NULL, NULL, NULL, err,
	    sizeof(err)) < 0) {
		cli_error("%s:%d: %s/%s: %s", d->fname, cd->line, cli_kind_singular(plural),
		    name, err);
		goto out;
	}
	if ((rc = diff_object(d, had == 0 ? old : NULL, doc, plural, ns, name)) ==
	    DIFF_ERROR)
		goto out;
	if (strcmp(plural, "decofiles") == 0 &&
	    (r2 = diff_rendered(d, doc, ns, name, cd->line)) != DIFF_SAME)
		rc = r2;
out:
	if (old)
		yajl_tree_free(old);
	yajl_tree_free(doc);
	return rc;
}

int
cli_diff(struct cli *c)
{
	struct yaml_docs docs;
	struct diff d;
	const char *tmpdir = getenv("TMPDIR");
	int rc, any = 0, failed = 0;

	if (c->argc == 1 && c->file == NULL)
		return cli_diff_name(c, c->argv[0]);
	if (c->argc == 1)
		return cli_usage_error(c, "diff takes -f FILE or a NAME, not both");
	if (c->out != OUT_TABLE)
		return cli_usage_error(c, "diff -f FILE: -o is for diff NAME");
	memset(&d, 0, sizeof(d));
	d.c = c;
	if ((rc = cli_load_docs(c, &docs, &d.fname)) != CLI_OK)
		return rc == CLI_USAGE ? CLI_USAGE : DIFF_ERROR;
	if (cli_store(c) == NULL) {
		yaml_docs_free(&docs);
		return DIFF_ERROR;
	}
	d.tmp = xasprintf("%s/decoctl-diff.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
	if (mkdtemp(d.tmp) == NULL) {
		cli_error("cannot make a temporary folder %s: %s", d.tmp, strerror(errno));
		free(d.tmp);
		yaml_docs_free(&docs);
		return DIFF_ERROR;
	}
	for (size_t i = 0; i < docs.n; i++) {
		rc = diff_one(&d, &docs.v[i], (int)i + 1);
		failed |= rc == DIFF_ERROR;
		any |= rc == DIFF_CHANGED;
	}
	rm_rf(d.tmp);
	free(d.tmp);
	spool_close(d.sp);
	yaml_docs_free(&docs);
	return failed ? DIFF_ERROR : any ? DIFF_CHANGED : DIFF_SAME;
}

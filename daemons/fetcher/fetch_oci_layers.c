/*
 * fetch_oci_layers - the layers of one OCI manifest turned into files, then
 * into a tree: each blob fetched once and verified, read with fetch_archive
 * (tar, tar+gzip) or taken whole (a file with a title annotation), later
 * layers replacing earlier ones' files, whiteouts honoured.  The gathered
 * files belong to the session (struct oci).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/util.h"
#include "daemons/fetcher/fetch_archive.h"
#include "daemons/fetcher/fetch_keys.h"
#include "daemons/fetcher/fetch_oci_int.h"

static struct file *
file_find(struct oci *o, const char *path)
{
	for (size_t i = 0; i < o->nf; i++)
		if (strcmp(o->f[i].path, path) == 0)
			return &o->f[i];
	return NULL;
}

static void
file_drop(struct oci *o, size_t i)
{
	free(o->f[i].path);
	buf_free(&o->f[i].data);
	o->f[i] = o->f[--o->nf];
}

/* a whiteout: ".wh.NAME" removes NAME, ".wh..wh..opq" the folder's contents */
static void
whiteout(struct oci *o, const char *path)
{
	const char *base = strrchr(path, '/');
	size_t dirlen = base != NULL ? (size_t)(base - path + 1) : 0;
	char *target;

	base = base != NULL ? base + 1 : path;
	if (strcmp(base, ".wh..wh..opq") == 0) {
		for (size_t i = 0; i < o->nf;)
			if (strncmp(o->f[i].path, path, dirlen) == 0)
				file_drop(o, i);
			else
				i++;
		return;
	}
	target = xasprintf("%.*s%s", (int)dirlen, path, base + 4);
	for (size_t i = 0; i < o->nf;) {
		size_t n = strlen(target);

		if (strcmp(o->f[i].path, target) == 0 ||
		    (strncmp(o->f[i].path, target, n) == 0 && o->f[i].path[n] == '/'))
			file_drop(o, i);
		else
			i++;
	}
	free(target);
}

/* the path cleaned ("./a//b" is "a/b"); 0 or -1 */
int
oci_clean(const char *in, char *out, size_t outlen)
{
	while (in[0] == '.' && in[1] == '/')
		in += 2;
	if (path_clean_rel(in, out, outlen) < 0)
		return -1;
	return 0;
}

static int
under_dir(struct oci *o, const char *path)
{
	size_t n = strlen(o->dir);

	return n == 0 || (strncmp(path, o->dir, n) == 0 && path[n] == '/');
}

static int
layer_want(void *arg, const char *path, int is_dir, struct fetch_result *res)
{
	struct oci *o = arg;
	char p[1100];
	const char *base;

	if (is_dir)
		return 0;
	if (oci_clean(path, p, sizeof(p)) < 0)
		return fetch_result_error(res, "FetchError", "layer: refused: entry '%s'", path);
	base = strrchr(p, '/');
	base = base != NULL ? base + 1 : p;
	if (strncmp(base, ".wh.", 4) == 0) {
		whiteout(o, p);
		return 0;
	}
	return under_dir(o, p);
}

static int
layer_file(void *arg, const char *path, const void *data, size_t len,
    struct fetch_result *res)
{
	struct oci *o = arg;
	struct file *f;
	char p[1100];

	(void)res;
	if (oci_clean(path, p, sizeof(p)) < 0)
		return fetch_result_error(res, "FetchError", "layer: refused: entry '%s'", path);
	if ((f = file_find(o, p)) == NULL) {
		if (o->nf == o->capf) {
			o->capf = o->capf ? o->capf * 2 : 32;
			o->f = xrealloc(o->f, o->capf * sizeof(*o->f));
		}
		f = &o->f[o->nf++];
		f->path = xstrdup(p);
		buf_init(&f->data);
	}
	buf_reset(&f->data);
	buf_add(&f->data, data, len);
	return 0;
}

static int
is_tar(const char *mt, int *gz)
{
	static const char *const tars[] = { "application/vnd.oci.image.layer.v1.tar",
	    "application/vnd.oci.image.layer.nondistributable.v1.tar",
	    "application/vnd.docker.image.rootfs.diff.tar", NULL };
	static const char *const tgzs[] = { "application/vnd.oci.image.layer.v1.tar+gzip",
	    "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
	    "application/vnd.docker.image.rootfs.diff.tar.gzip",
	    "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", NULL };

	for (int i = 0; tars[i] != NULL; i++)
		if (strcmp(mt, tars[i]) == 0)
			return (*gz = 0, 1);
	for (int i = 0; tgzs[i] != NULL; i++)
		if (strcmp(mt, tgzs[i]) == 0)
			return (*gz = 1, 1);
	return 0;
}

/*
 * the verified bytes of the layers listed in one manifest, by listing: a
 * blob is fetched once however often the manifest names its digest, and
 * kept only while a later listing still names it
 */
struct held {
	const char *digest;	/* borrowed from the manifest */
	struct buf body;
	int have;
};

/* does a listing after i name digest? */
static int
named_later(yajl_val list, size_t i, const char *digest)
{
	for (size_t k = i + 1; k < list->u.array.len; k++) {
		const char *d = json_get_str(list->u.array.values[k], "digest", NULL);

		if (d != NULL && strcmp(d, digest) == 0)
			return 1;
	}
	return 0;
}

/* the bytes of listing i into held[i]: from an earlier listing of the same digest, or a GET */
static int
get_layer(struct oci *o, struct held *held, size_t i, int64_t size, uint64_t *total)
{
	uint64_t cap = o->req->lim.max_tree > 0 ? o->req->lim.max_tree : (uint64_t)256 << 20;
	const char *digest = held[i].digest;
	struct fetch_http_resp r;
	char path[120];
	int rc = 0;

	for (size_t j = 0; j < i; j++) {
		if (!held[j].have || strcmp(held[j].digest, digest) != 0)
			continue;
		held[i].body = held[j].body;
		held[i].have = 1;
		held[j].have = 0;
		if (held[i].body.len != (size_t)size)
			return fetch_result_error(o->res, "FetchError",
			    "registry %s: blob %s: listed again with %lld bytes, it has %zu; refused",
			    o->host, digest, (long long)size, held[i].body.len);
		return 0;
	}
	*total += (uint64_t)size;
	if (*total > cap)
		return fetch_result_error(o->res, "TooLarge",
		    "registry %s: %s:%s: layers larger than max_tree_size (%llu bytes)",
		    o->host, o->name, o->ref, (unsigned long long)cap);
	snprintf(path, sizeof(path), "blobs/%s", digest);
	if (oci_call(o, "GET", path, NULL, (size_t)size + 1, &r) < 0)
		return -1;
	if (r.status != 200) {
		rc = oci_reg_error(o, "blob", &r);
	} else if (r.body.len != (size_t)size) {
		rc = fetch_result_error(o->res, "FetchError",
		    "registry %s: blob %s: %zu bytes, the manifest says %lld; refused",
		    o->host, digest, r.body.len, (long long)size);
	} else if ((rc = oci_verify(o, "blob", digest, &r.body)) == 0) {
		held[i].body = r.body;
		held[i].have = 1;
		buf_init(&r.body);
	}
	fetch_http_resp_free(&r);
	return rc;
}

/* listing i of the manifest's layers: fetched (or taken again), verified, its files gathered */
static int
read_layer(struct oci *o, yajl_val list, struct held *held, size_t i, uint64_t *total)
{
	yajl_val layer = list->u.array.values[i];
	const char *digest = json_get_str(layer, "digest", NULL);
	const char *mt = json_get_str(layer, "mediaType", NULL);
	const char *title = json_get_str(layer, "annotations",
	    "org.opencontainers.image.title", NULL);
	int64_t size = json_get_int(layer, -1, "size", NULL);
	const struct buf *body;
	char what[160];
	int gz = 0, rc;

	if (!oci_valid_digest(digest) || mt == NULL || size < 0)
		return fetch_result_error(o->res, "FetchError",
		    "registry %s: a layer of %s:%s has no valid digest, mediaType or size",
		    o->host, o->name, o->ref);
	if (!is_tar(mt, &gz) && title == NULL)
		return fetch_result_error(o->res, "FetchError",
		    "registry %s: layer %s: media type %s is not supported (tar, tar+gzip, "
		    "or a file with an org.opencontainers.image.title annotation)",
		    o->host, digest, mt);
	held[i].digest = digest;
	if (get_layer(o, held, i, size, total) < 0)
		return -1;
	body = &held[i].body;
	snprintf(what, sizeof(what), "layer %.19s", digest);
	if (is_tar(mt, &gz)) {
		rc = fetch_archive_read(body->data ? body->data : "", body->len,
		    FETCH_ARCHIVE_TAR, &o->req->alim, what, layer_want, layer_file, o, o->res);
	} else {
		/* one file (an ORAS-style artifact): its title is its path */
		rc = layer_want(o, title, 0, o->res);
		if (rc > 0)
			rc = layer_file(o, title, body->data ? body->data : "", body->len, o->res);
	}
	if (!named_later(list, i, digest)) {
		buf_free(&held[i].body);
		held[i].have = 0;
	}
	return rc < 0 ? -1 : 0;
}

/* every layer of an image manifest, in order */
int
oci_read_layers(struct oci *o, const char *digest, yajl_val list)
{
	struct held *held;
	uint64_t total = 0;
	size_t n;
	int rc = 0;

	if (list == NULL || !YAJL_IS_ARRAY(list))
		return fetch_result_error(o->res, "FetchError",
		    "registry %s: manifest %s has no layers", o->host, digest);
	n = list->u.array.len;
	if (n > FETCH_OCI_MAX_LAYERS)
		return fetch_result_error(o->res, "FetchError",
		    "registry %s: manifest %s lists %zu layers, more than %d; refused",
		    o->host, digest, n, FETCH_OCI_MAX_LAYERS);
	held = xcalloc(n ? n : 1, sizeof(*held));
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = read_layer(o, list, held, i, &total);
	for (size_t i = 0; i < n; i++)
		if (held[i].have)
			buf_free(&held[i].body);
	free(held);
	return rc;
}


int
oci_add_files(struct oci *o, struct spool *sp)
{
	struct fetch_tree *t = fetch_tree_new(sp, &o->req->lim);
	char key[1024];
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < o->nf; i++) {
		const char *rel = o->f[i].path + (o->dir[0] ? strlen(o->dir) + 1 : 0);
		int krc = fetch_key_from_path(rel, key, sizeof(key), o->res->error,
		    sizeof(o->res->error));

		if (krc == 1)
			continue;
		if (krc < 0) {
			o->res->reason = "FetchError";
			rc = -1;
			break;
		}
		rc = fetch_tree_add(t, key, rel, o->f[i].data.data ? o->f[i].data.data : "",
		    o->f[i].data.len, o->res);
	}
	if (rc == 0)
		rc = fetch_tree_finish(t, "oci", o->out->digest, o->res);
	fetch_tree_free(t);
	return rc;
}

void
oci_files_free(struct oci *o)
{
	for (size_t i = 0; i < o->nf; i++) {
		free(o->f[i].path);
		buf_free(&o->f[i].data);
	}
	free(o->f);
	o->f = NULL;
	o->nf = o->capf = 0;
}

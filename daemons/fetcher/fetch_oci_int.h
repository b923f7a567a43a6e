/*
 * fetch_oci_int.h - what the OCI source's two halves share: fetch_oci.c
 * (the registry session: auth, requests, manifests) and fetch_oci_layers.c
 * (the layers of one manifest turned into files, then into a tree).
 * Private to the fetcher.
 */
#ifndef DECOD_FETCH_OCI_INT_H
#define DECOD_FETCH_OCI_INT_H

#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_tree.h>

#include "common/util.h"
#include "daemons/fetcher/fetch_http.h"
#include "daemons/fetcher/fetch_oci.h"

struct file {
	char *path;
	struct buf data;
};

struct oci {
	const struct fetch_oci_req *req;
	char base[600];		/* http(s)://host[:port] */
	char host[256], name[256], ref[200];
	int allow_http;
	char auth[4200];	/* "Authorization: ..." or "" */
	int tried_auth;
	struct fetch_oci_out *out;
	struct fetch_result *res;
	/* gathered files */
	struct file *f;
	size_t nf, capf;
	char dir[1024];		/* spec.oci.dir cleaned, "" for all */
};

/* ---- fetch_oci.c ---- */

/*
 * oci_call - one request to <base>/v2/<name>/<path>, authenticating once
 * on a 401: 0 with r filled, any status (the caller frees it), or -1 with
 * o->res set
 */
int oci_call(struct oci *o, const char *method, const char *path, const char *accept,
    size_t max_body, struct fetch_http_resp *r);
/* oci_reg_error - the registry's answer r to a request for what, into o->res; -1 */
int oci_reg_error(struct oci *o, const char *what, struct fetch_http_resp *r);
/* oci_valid_digest - "sha256:" and 64 lower-case hex digits */
int oci_valid_digest(const char *d);
/* oci_verify - b's bytes hash to digest; 0, or -1 with o->res set */
int oci_verify(struct oci *o, const char *what, const char *digest, const struct buf *b);

/* ---- fetch_oci_layers.c ---- */

/* oci_clean - the path cleaned ("./a//b" is "a/b"); 0 or -1 */
int oci_clean(const char *in, char *out, size_t outlen);
/*
 * oci_read_layers - every layer an image manifest (named digest) lists, in
 * order, into o's files: at most FETCH_OCI_MAX_LAYERS, a digest listed
 * twice fetched once; 0, or -1 with o->res set
 */
int oci_read_layers(struct oci *o, const char *digest, yajl_val list);
/* oci_add_files - the files under o->dir into a tree in sp; 0, or -1 with o->res set */
int oci_add_files(struct oci *o, struct spool *sp);
/* oci_files_free - the gathered files */
void oci_files_free(struct oci *o);

#endif

/*
 * fetch_oci - the OCI source: an artifact or image in a registry speaking
 * the distribution API.  The manifest digest is the commit (a HEAD tells
 * it; the manifest and layers are read only when it moved), image indexes
 * and manifests of OCI and Docker are understood, layers (tar, tar+gzip)
 * are read with fetch_archive under the hostile-archive guards, and every
 * blob's digest is checked before its bytes are used.  A manifest lists at
 * most FETCH_OCI_MAX_LAYERS layers, and a digest listed more than once is
 * fetched once and applied at each place it is listed.
 */
#ifndef DECOD_FETCH_OCI_H
#define DECOD_FETCH_OCI_H

#include <stdint.h>

#include "daemons/fetcher/fetch_archive.h"
#include "daemons/fetcher/fetch_tree.h"

struct spool;

/*
 * the most layers one manifest may list: Docker's layer store refuses an
 * image deeper than 125 layers (some graph drivers stack at most 127), so
 * no image that runs anywhere has more, and an artifact of blocks needs a
 * handful.  Past it the manifest is refused before any blob is fetched.
 */
#define FETCH_OCI_MAX_LAYERS 128

struct fetch_oci_req {
	const char *image;	/* [registry/]name[:tag][@sha256:...] */
	const char *dir;	/* folder in the artifact; NULL, "" or "/": all */
	const char *creds;	/* "username:password" (basic auth, token server), or NULL */
	const char *insecure;	/* registries (host[:port], space or comma separated)
				 * reached over plain HTTP; NULL: none */
	const char *last_digest;	/* digest of the last good fetch, or "" */
	int force;		/* read the layers even when the digest did not move */
	const char *auth;	/* out->auth of a past fetch (a bearer token bound to its
				 * registry), tried first on that registry only; NULL:
				 * none.  Never logged. */
	int64_t deadline;	/* now_ms() value the fetch must end by */
	struct fetch_limits lim;
	struct fetch_archive_limits alim;
};

struct fetch_oci_out {
	char digest[80];	/* "sha256:<hex>" of the manifest (or index) */
	int unchanged;
	int requests;		/* HTTP requests made */
	char auth[4300];	/* the bearer token that worked, bound to its registry
				 * ("" none): keep it for the next poll, wipe it after */
};

/*
 * fetch_oci - resolve the manifest digest and, when it moved (or force),
 * read the artifact's blocks into the spool; res->commit is the digest.
 * 0 with out (and res when read) filled, or -1 with res->reason and a
 * message that never holds a credential or token.
 */
int fetch_oci(struct spool *sp, const struct fetch_oci_req *req, struct fetch_oci_out *out,
    struct fetch_result *res);

/*
 * fetch_oci_parse_ref - split image into registry host, repository name
 * and reference (tag or digest); docker.io names get their library/
 * prefix.  0 or -1 when it is not a valid reference.
 */
int fetch_oci_parse_ref(const char *image, char *host, size_t hostlen, char *name,
    size_t namelen, char *ref, size_t reflen);

#endif

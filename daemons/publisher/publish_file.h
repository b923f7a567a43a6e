/*
 * publish_file - the `file` target: a rendered document under
 * <root>/<ns>/<name>/ as decofile.json or decofile.bin plus timestamp.txt.
 */
#ifndef DECOD_PUBLISH_FILE_H
#define DECOD_PUBLISH_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * When the document is already in place, keep a valid timestamp.txt that is
 * there and newer than req->keep_after instead of writing req->timestamp (a
 * redo after a crash between the write and the journal commit keeps the
 * timestamp replicas may have seen; an older one belongs to the previous
 * publish and is replaced).  Without the flag timestamp.txt must hold
 * exactly req->timestamp (drift repair puts back the last published version).
 */
#define PUBLISH_FILE_KEEP_TS 0x1

struct publish_file_req {
	const char *root;	/* file_root: must be an absolute path */
	const char *ns;		/* name_valid() */
	const char *name;	/* name_valid() */
	const char *format;	/* "json" or "bin" */
	const void *data;	/* the bytes to publish (JSON, or base64 brotli) */
	size_t len;
	int64_t timestamp;	/* unix seconds */
	int flags;		/* PUBLISH_FILE_* */
	int64_t keep_after;	/* PUBLISH_FILE_KEEP_TS: keep only a newer one */
};

/* a cheap fingerprint of a file: changes whenever the file is written */
struct publish_file_sig {
	dev_t dev;
	ino_t ino;
	off_t size;
	int64_t mtime_ns;
	int64_t ctime_ns;
};

struct publish_file_res {
	char dir[4096];		/* <root>/<ns>/<name> */
	char path[4200];	/* the document */
	char location[4300];	/* file://<path> */
	int64_t timestamp;	/* what timestamp.txt holds now */
	int wrote_doc;		/* the document was (re)written */
	int wrote_ts;		/* timestamp.txt was (re)written */
	int removed;		/* the other format / a stray entry was removed */
	char detail[256];	/* what was wrong, for drift records ("" if nothing) */
	struct publish_file_sig doc_sig;	/* of the document as left */
	struct publish_file_sig ts_sig;		/* of timestamp.txt as left */
};

/*
 * publish_file - make the target hold req's document, atomically: the
 * document first (temp file, fsync, rename), timestamp.txt last, then the
 * other format's file removed.  A document already there is recognized by
 * hashing the file and comparing with sha256(req->data) -- for json that is
 * the content hash, for bin the bin blob's hash -- so no sidecar is kept and
 * a hand-edited file is never mistaken for the published one.  Symlinks in
 * the folder chain are replaced by real folders, so nothing is written
 * outside root.  Returns 0 (res says what changed) or -1 with err.
 */
int publish_file(const struct publish_file_req *req, struct publish_file_res *res,
    char *err, size_t errlen);

/*
 * publish_file_paths - fill res->dir, res->path and res->location for ns,
 * name and format without touching the disk; 0 or -1 (bad names) with err.
 */
int publish_file_paths(const char *root, const char *ns, const char *name,
    const char *format, struct publish_file_res *res, char *err, size_t errlen);

/*
 * publish_file_remove - delete <root>/<ns>/<name> and <root>/<ns> when it
 * is left empty.  Absent is fine.  0 or -1 with err.
 */
int publish_file_remove(const char *root, const char *ns, const char *name,
    char *err, size_t errlen);

/* publish_file_sig - lstat fingerprint of path; 0, or -1 (absent, error) */
int publish_file_sig(const char *path, struct publish_file_sig *sig);
/* publish_file_sig_eq - nonzero when both fingerprints are the same */
int publish_file_sig_eq(const struct publish_file_sig *a, const struct publish_file_sig *b);

#endif

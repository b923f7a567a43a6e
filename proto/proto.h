/*
 * proto - the messages stages send each other over nng PUSH/PULL.  They
 * are doorbells: each names a journal item (id) and repeats what it is
 * about, so a receiver can log it; the journal row is the truth.
 *
 * Layout (all integers big-endian), version 1:
 *   0  u8[4] magic "DECO"
 *   4  u8    version (1)
 *   5  u8    type (enum proto_type)
 *   6  u16   flags (0)
 *   8  u64   item id
 *  16  u16   kind length   } each string: UTF-8, no NUL, bounded below
 *  18  u16   ns length     }
 *  20  u16   name length   }
 *  22  u16   hash length   } (0 or 64)
 *  24  bytes kind, ns, name, hash, in that order
 * The total size must equal 24 + the four lengths exactly.
 * See proto/PROTOCOL.md.
 */
#ifndef DECOD_PROTO_H
#define DECOD_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define PROTO_MAGIC "DECO"
#define PROTO_VERSION 1
#define PROTO_HDR_LEN 24
#define PROTO_MAX_KIND 31
#define PROTO_MAX_NS 253
#define PROTO_MAX_NAME 253
#define PROTO_MAX_LEN (PROTO_HDR_LEN + PROTO_MAX_KIND + PROTO_MAX_NS + PROTO_MAX_NAME + 64)

enum proto_type {
	PROTO_ITEM = 1,		/* "an item for you is in the journal" */
	PROTO_RESCAN = 2,	/* "rescan the journal" (id 0, strings may be empty) */
	PROTO_TYPE_MAX = 2,
};

struct proto_msg {
	uint8_t type;
	uint64_t item_id;
	char kind[PROTO_MAX_KIND + 1];
	char ns[PROTO_MAX_NS + 1];
	char name[PROTO_MAX_NAME + 1];
	char hash[65];
};

/*
 * proto_encode - write m into out (at least PROTO_MAX_LEN bytes).  Returns
 * the length, or -1 if a field is too long or has a NUL.
 */
int proto_encode(const struct proto_msg *m, unsigned char *out, size_t outlen);

/*
 * proto_decode - check a received message whole (magic, version, type,
 * sizes, string contents) and fill m.  Returns 0, or -1 with the reason in
 * err (never trust a message that fails).
 */
int proto_decode(const void *buf, size_t len, struct proto_msg *m, char *err, size_t errlen);

/*
 * proto_word_ok - s is one word as item details and tree manifests carry
 * it: non-empty, printable ASCII, no space, shorter than max bytes (0: any
 * length).  1 or 0.
 */
int proto_word_ok(const char *s, size_t max);

/*
 * Item details (PROTOCOL.md §2): the `detail` column of a work item, typed
 * per receiving stage.  Text is "key=value" words joined by single spaces,
 * at most PROTO_MAX_DETAIL bytes (the journal_item buffer); a word "v=1"
 * may name the version (absent: 1).  Values are printable ASCII without
 * spaces.  Encoders return the length written into out, or -1 if a field
 * is missing or bad (nothing useful is in out then).  Decoders check the
 * whole detail (every word known, none twice, each value's form and size,
 * required ones present) and return 0, or -1 with the reason in err.
 */
#define PROTO_DETAIL_VERSION 1
#define PROTO_MAX_DETAIL 511
#define PROTO_MAX_SOURCE 31
#define PROTO_MAX_COMMIT 127

/* to the renderer, from the fetcher: "source=git commit=<id> generation=<n>" */
struct proto_render_detail {
	char source[PROTO_MAX_SOURCE + 1];	/* required: inline, dir, git, github, oci */
	char commit[PROTO_MAX_COMMIT + 1];	/* "": the source has none */
	int64_t generation;			/* metadata.generation; -1: not given */
};
int proto_render_detail_encode(const struct proto_render_detail *d, char *out, size_t outlen);
int proto_render_detail_decode(const char *s, struct proto_render_detail *d, char *err,
    size_t errlen);

/* to the publisher, from the renderer: "format=bin bin=<sha256> commit=<id>" */
struct proto_publish_detail {
	char format[8];				/* required: "json" or "bin" */
	char bin[65];				/* sha256 of the brotli blob; required for bin */
	char commit[PROTO_MAX_COMMIT + 1];	/* "": none */
};
int proto_publish_detail_encode(const struct proto_publish_detail *d, char *out,
    size_t outlen);
int proto_publish_detail_decode(const char *s, struct proto_publish_detail *d, char *err,
    size_t errlen);

/* to the notifier, from the publisher: "timestamp=<unix s> commit=<id or ->" */
struct proto_notify_detail {
	int64_t timestamp;			/* required: the published timestamp */
	char commit[PROTO_MAX_COMMIT + 1];	/* "": none (written "commit=-") */
};
int proto_notify_detail_encode(const struct proto_notify_detail *d, char *out,
    size_t outlen);
int proto_notify_detail_decode(const char *s, struct proto_notify_detail *d, char *err,
    size_t errlen);

#endif

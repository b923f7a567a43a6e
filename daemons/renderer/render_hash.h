/*
 * render_hash - the sha256 of a document while it is still being written.
 * On a machine with a second CPU, a thread follows the writer and hashes
 * what is final while the writer validates the next block, so the hash
 * (a third of render_merge on one CPU, even with SHA-NI) costs the writer
 * almost nothing; elsewhere the writer hashes each piece itself.  The hex
 * digest is the same either way: the same bytes in the same order.
 */
#ifndef DECOD_RENDER_HASH_H
#define DECOD_RENDER_HASH_H

#include <stddef.h>

#include "common/hash.h"

/* below this many bytes a document is hashed on the calling thread */
#define RENDER_HASH_THREAD_MIN	(1024 * 1024)

struct render_hash;

/*
 * render_hash_new - start hashing the bytes at base, expected to grow to
 * about size bytes (a guess, to choose the thread).  The caller keeps
 * base[0..len) in place and unchanged once it has passed len to
 * render_hash_upto, until render_hash_final returns.
 */
struct render_hash *render_hash_new(const char *base, size_t size);

/* render_hash_upto - base[0..len) is final (len never goes down) */
void render_hash_upto(struct render_hash *h, size_t len);

/*
 * render_hash_final - hash base[0..len), write the hex digest to hex
 * (NULL: throw it away, as after an error), and free h: the thread is
 * joined before it returns.
 */
void render_hash_final(struct render_hash *h, size_t len, char hex[SHA256_HEX_LEN + 1]);

/*
 * render_hash_threads - 0: always hash on the calling thread (benchmarks
 * that want one CPU's figure); 1 (the default): a thread for big documents
 * when the process may run on more than one CPU.
 */
void render_hash_threads(int on);

#endif

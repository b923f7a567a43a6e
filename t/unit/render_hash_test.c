/*
 * render_hash_test - the sha256 of a growing buffer is the one of its
 * bytes, on the calling thread and on the following thread, whatever the
 * steps the writer publishes in; an abandoned hash (an error) lets go of
 * the thread; and render_merge of a big site gives the same bytes and hash
 * with the thread as without, and nothing on a refusal.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "common/hash.h"
#include "daemons/renderer/render_hash.h"
#include "daemons/renderer/render_merge.h"
#include "t/tap.h"

/* map - size bytes of fresh memory that munmap takes away at once */
static char *
map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		abort();
	return p;
}

/*
 * steps_tests - random publish steps over a buffer filled as it goes; the
 * buffer is unmapped as soon as render_hash_final returns, so a thread
 * still reading it faults (and TSan sees a race)
 */
static void
steps_tests(int threads)
{
	size_t size = 3 * 1024 * 1024 + 17;
	char want[SHA256_HEX_LEN + 1], got[SHA256_HEX_LEN + 1];
	unsigned seed = 25;
	int rounds = 12, same = 0;

	render_hash_threads(threads);
	for (int r = 0; r < rounds; r++) {
		size_t len = r == 0 ? 0 : size - (size_t)(rand_r(&seed) % 4096);
		char *b = map(size);
		struct render_hash *h = render_hash_new(b, len);
		size_t at = 0;

		/* every other round: all the bytes at once, then at once the end */
		if (r % 2 == 1) {
			for (size_t i = 0; i < len; i++)
				b[i] = (char)(rand_r(&seed) >> 7);
			render_hash_upto(h, at = len);
		}
		while (at < len) {
			/* from one byte to 300 KB: both sides of the publish step */
			size_t n = rand_r(&seed) % 3 == 0 ? 1 + (size_t)(rand_r(&seed) % 64) :
			    (size_t)(rand_r(&seed) % (300 * 1024));

			if (n > len - at)
				n = len - at;
			for (size_t i = 0; i < n; i++)
				b[at + i] = (char)(rand_r(&seed) >> 7);
			at += n;
			render_hash_upto(h, at);
		}
		render_hash_final(h, len, got);
		sha256_hex(b, len, want);
		munmap(b, size);
		same += strcmp(got, want) == 0;
		/* given up half way, as after an error: nothing to wait for or leak */
		b = map(size);
		h = render_hash_new(b, size);
		render_hash_upto(h, size / 2);
		/*
		 * not a wait for anything: it lets the thread get into the
		 * middle of the 1.5 MB, so that a render_hash_final returning
		 * before the thread is out of b would fault at the munmap
		 */
		usleep(200);
		render_hash_final(h, size / 2, NULL);
		munmap(b, size);
	}
	ok(same == rounds, "%s: the digest of the bytes, whatever the steps (%d of %d)",
	    threads ? "on the following thread" : "on the calling thread", same, rounds);
	render_hash_threads(1);
}

/* big_site - n blocks of about 8 KB each (pretty JSON, accented text) */
static struct render_input *
big_site(size_t n)
{
	struct render_input *in = xcalloc(n, sizeof(*in));

	for (size_t i = 0; i < n; i++) {
		struct buf b;
		char key[32], path[64];

		buf_init(&b);
		buf_adds(&b, "{\n  \"items\": [\n");
		for (int k = 0; k < 60; k++)
			buf_printf(&b, "%s    {\n      \"label\": \"Devolu\xc3\xa7\xc3\xa3o gr\xc3\xa1tis "
			    "%zu-%d\",\n      \"n\": %d\n    }", k ? ",\n" : "", i, k, k * 7);
		buf_adds(&b, "\n  ]\n}\n");
		snprintf(key, sizeof(key), "block-%04zu", n - i);
		snprintf(path, sizeof(path), "blocks/block-%04zu.json", n - i);
		in[i].key = xstrdup(key);
		in[i].path = xstrdup(path);
		in[i].len = b.len;
		in[i].data = buf_steal(&b, NULL);
		in[i].layer = RENDER_LAYER_OWN;
	}
	return in;
}

int
main(void)
{
	size_t n = 600;
	struct render_input *in;
	struct render_error e;
	struct buf one, two;
	char h1[SHA256_HEX_LEN + 1], h2[SHA256_HEX_LEN + 1], hb[SHA256_HEX_LEN + 1];
	char *bad;

	steps_tests(0);
	steps_tests(1);

	in = big_site(n);
	buf_init(&one);
	buf_init(&two);
	render_hash_threads(0);
	is_int(render_merge(in, n, &one, h1, &e), 0, "a 1.7 MB site merges on one thread");
	render_hash_threads(1);
	buf_adds(&two, "kept");
	is_int(render_merge(in, n, &two, h2, &e), 0, "and with the hashing thread");
	ok(one.len > RENDER_HASH_THREAD_MIN, "the site is over the thread's threshold (%zu bytes)",
	    one.len);
	ok(two.len == one.len + 4 && memcmp(two.data + 4, one.data, one.len) == 0,
	    "the same bytes, appended after what the buffer held");
	sha256_hex(one.data, one.len, hb);
	is_str(h2, h1, "the same hash with and without the thread");
	is_str(h1, hb, "the hash is the sha256 of the merged bytes");

	/* a bad block late in the order: refused, the buffer as it was */
	bad = xstrdup(in[0].data);
	bad[in[0].len - 3] = ',';
	free((char *)in[0].data);
	in[0].data = bad;
	is_int(render_merge(in, n, &two, h2, &e), -1, "a bad last block is refused");
	is_str(e.msg, "blocks/block-0600.json:243:6: parse error: invalid object key "
	    "(must be a string)", "with its file:line:column");
	ok(two.len == 4 + one.len && memcmp(two.data + 4, one.data, one.len + 1) == 0,
	    "and the buffer holds what it held (%zu bytes)", two.len);

	for (size_t i = 0; i < n; i++) {
		free((char *)in[i].key);
		free((char *)in[i].path);
		free((char *)in[i].data);
	}
	free(in);
	buf_free(&one);
	buf_free(&two);
	return done_testing();
}

/*
 * bench_render - time the renderer's library on a decofile folder: merge +
 * validate + hash, then the decofile.bin at a given brotli quality and
 * window, a sweep of qualities, or the peak RSS of one whole render.  The
 * folder is read once before timing, so only the renderer's work counts.
 *
 *   bench_render [-n ITER] [-q Q -w W] [-o MERGED.json] [-S] [-R] [-1] DIR
 *
 * -1 hashes on the calling thread, as on a machine with one CPU.
 */
#include "config.h"

#include <ftw.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#include "common/util.h"
#include "daemons/renderer/render_brotli.h"
#include "daemons/renderer/render_hash.h"
#include "daemons/fetcher/fetch_keys.h"
#include "daemons/renderer/render_merge.h"

static struct render_input *inputs;
static size_t ninputs, capinputs, inbytes;

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* key_of - the fetcher's own rule (SPEC §9), so the benchmark keys as decod does */
static char *
key_of(const char *path)
{
	char key[4096], err[512];

	if (fetch_key_from_path(path, key, sizeof(key), err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_render: %s: not a block (%s)\n", path, err);
		return NULL;
	}
	return xstrdup(key);
}

static int
visit(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	struct render_input *r;
	size_t len;
	char *data;

	(void)sb;
	(void)ftw;
	if (type != FTW_F)
		return 0;
	if ((data = read_file(path, &len, 0)) == NULL) {
		perror(path);
		return -1;
	}
	if (ninputs == capinputs) {
		capinputs = capinputs ? capinputs * 2 : 256;
		inputs = xrealloc(inputs, capinputs * sizeof(*inputs));
	}
	r = &inputs[ninputs];
	if ((r->key = key_of(path)) == NULL) {
		free(data);
		return 0;
	}
	ninputs++;
	r->path = xstrdup(path);
	r->data = data;
	r->len = len;
	r->layer = RENDER_LAYER_OWN;
	inbytes += len;
	return 0;
}

static int
dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* merge_once - one merge; exits on a refused folder */
static double
merge_once(struct buf *out, char *hash)
{
	struct render_error e;
	double t0 = now_s();

	buf_reset(out);
	if (render_merge(inputs, ninputs, out, hash, &e) < 0) {
		fprintf(stderr, "bench_render: %s\n", e.msg);
		exit(1);
	}
	return now_s() - t0;
}

/* bin_once - brotli + base64 of json; seconds, sizes in *brlen and *binlen */
static double
bin_once(const struct buf *json, int q, int w, size_t *brlen, size_t *binlen)
{
	struct buf br;
	double t0 = now_s();
	char *bin;

	buf_init(&br);
	render_brotli_compress(json->data, json->len, q, w, &br);
	*brlen = br.len;
	buf_free(&br);
	bin = render_bin(json->data, json->len, q, w, binlen);
	free(bin);
	return (now_s() - t0) / 2;	/* both passes did the same brotli */
}

static void
usage(void)
{
	fprintf(stderr, "usage: bench_render [-n ITER] [-q Q] [-w W] [-o OUT] [-S] [-R] [-1] DIR\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	int iters = 20, q = RENDER_BROTLI_QUALITY, w = RENDER_BROTLI_WINDOW;
	int sweep = 0, rss = 0, c;
	const char *outpath = NULL;
	char hash[65];
	struct buf json;
	double *t;

	while ((c = getopt(argc, argv, "n:q:w:o:SR1")) != -1) {
		switch (c) {
		case 'n': iters = atoi(optarg); break;
		case 'q': q = atoi(optarg); break;
		case 'w': w = atoi(optarg); break;
		case 'o': outpath = optarg; break;
		case 'S': sweep = 1; break;
		case 'R': rss = 1; break;
		case '1': render_hash_threads(0); break;
		default: usage();
		}
	}
	if (optind + 1 != argc || iters < 1)
		usage();
	if (nftw(argv[optind], visit, 32, FTW_PHYS) != 0)
		return 1;
	buf_init(&json);

	if (rss) {
		/* one whole render, as the stage does it: merge, then the .bin */
		struct rusage ru;
		size_t binlen;
		double t0 = now_s();
		char *bin;

		merge_once(&json, hash);
		/* as the stage does: the blocks are freed before brotli */
		for (size_t i = 0; i < ninputs; i++)
			free((char *)inputs[i].data);
		malloc_trim(0);
		bin = render_bin(json.data, json.len, q, w, &binlen);
		getrusage(RUSAGE_SELF, &ru);
		printf("rss files=%zu input_bytes=%zu json_bytes=%zu bin_bytes=%zu "
		    "seconds=%.2f maxrss_kb=%ld q=%d w=%d\n", ninputs, inbytes,
		    json.len, binlen, now_s() - t0, ru.ru_maxrss, q, w);
		free(bin);
		return 0;
	}

	t = xcalloc((size_t)iters, sizeof(*t));
	for (int i = 0; i < iters; i++)
		t[i] = merge_once(&json, hash);
	qsort(t, (size_t)iters, sizeof(*t), dcmp);
	printf("merge files=%zu input_bytes=%zu json_bytes=%zu hash=%s "
	    "median_ms=%.1f min_ms=%.1f max_ms=%.1f iters=%d\n", ninputs, inbytes,
	    json.len, hash, t[iters / 2] * 1e3, t[0] * 1e3, t[iters - 1] * 1e3, iters);
	if (outpath != NULL && write_file_atomic(outpath, json.data, json.len, 0644) < 0) {
		perror(outpath);
		return 1;
	}

	if (sweep) {
		static const int windows[] = { 22, 24 };

		for (size_t wi = 0; wi < 2; wi++) {
			for (int qq = 0; qq <= 11; qq++) {
				size_t brlen, binlen;
				double s = bin_once(&json, qq, windows[wi], &brlen, &binlen);

				printf("sweep q=%d w=%d seconds=%.3f br_bytes=%zu "
				    "br_pct=%.2f bin_bytes=%zu bin_pct=%.2f\n", qq,
				    windows[wi], s, brlen, 100.0 * (double)brlen / (double)json.len,
				    binlen, 100.0 * (double)binlen / (double)json.len);
				fflush(stdout);
			}
		}
	} else {
		/* render = merge + brotli + base64, as the stage does it */
		int n = iters > 5 ? 5 : iters;
		size_t binlen = 0, brlen;
		struct buf br;

		for (int i = 0; i < n; i++) {
			double t0 = now_s();
			char *bin;

			merge_once(&json, hash);
			bin = render_bin(json.data, json.len, q, w, &binlen);
			t[i] = now_s() - t0;
			free(bin);
		}
		qsort(t, (size_t)n, sizeof(*t), dcmp);
		buf_init(&br);
		render_brotli_compress(json.data, json.len, q, w, &br);
		brlen = br.len;
		buf_free(&br);
		printf("render q=%d w=%d median_s=%.3f min_s=%.3f br_bytes=%zu br_pct=%.2f "
		    "bin_bytes=%zu bin_pct=%.2f\n", q, w, t[n / 2], t[0], brlen,
		    100.0 * (double)brlen / (double)json.len, binlen,
		    100.0 * (double)binlen / (double)json.len);
	}
	free(t);
	buf_free(&json);
	return 0;
}

/*
 * sigv4 - AWS Signature Version 4 on openssl (hmac_sha256, sha256_hex from
 * common/hash).  curl's own --aws-sigv4 neither sorts nor encodes the query
 * and sends no x-amz-content-sha256, so S3 gets this instead.  Holds no
 * state; the derived key lives on the stack and is wiped after use.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "common/hash.h"
#include "common/util.h"
#include "daemons/publisher/sigv4.h"

#define MAX_HEADERS 64

static int
unreserved(unsigned char c)
{
	return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

void
sigv4_uri_encode(struct buf *b, const char *s, size_t len, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (unreserved(c) || (keep_slash && c == '/')) {
			buf_addc(b, (char)c);
		} else {
			buf_addc(b, '%');
			buf_addc(b, hex[c >> 4]);
			buf_addc(b, hex[c & 15]);
		}
	}
}

void
sigv4_amz_date(long long t, char out[17])
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

/* canonical_uri - S3: encode as is; others: resolve . and .., collapse // */
static void
canonical_uri(struct buf *b, const char *path, int normalize)
{
	const char *segs[256];
	size_t lens[256], n = 0;
	const char *p = path, *e;
	int trailing;

	if (path == NULL || *path == '\0') {
		buf_addc(b, '/');
		return;
	}
	if (!normalize) {
		if (*path != '/')
			buf_addc(b, '/');
		sigv4_uri_encode(b, path, strlen(path), 1);
		return;
	}
	trailing = path[strlen(path) - 1] == '/';
	while (*p != '\0') {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		e = strchr(p, '/');
		if (e == NULL)
			e = p + strlen(p);
		if (e - p == 1 && p[0] == '.') {
			/* nothing */
		} else if (e - p == 2 && p[0] == '.' && p[1] == '.') {
			if (n > 0)
				n--;
		} else if (n < 256) {
			segs[n] = p;
			lens[n++] = (size_t)(e - p);
		}
		p = e;
	}
	for (size_t i = 0; i < n; i++) {
		buf_addc(b, '/');
		sigv4_uri_encode(b, segs[i], lens[i], 0);
	}
	if (n == 0 || trailing)
		buf_addc(b, '/');
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* pct_decode - %XX decoded; '+' stays a '+' (SigV4 is not form encoding) */
static char *
pct_decode(const char *s, size_t len, size_t *outlen)
{
	char *o = xmalloc(len + 1);
	size_t j = 0;

	for (size_t i = 0; i < len; i++) {
		int h, l;

		if (s[i] == '%' && i + 2 < len && (h = hexval(s[i + 1])) >= 0 &&
		    (l = hexval(s[i + 2])) >= 0) {
			o[j++] = (char)(h << 4 | l);
			i += 2;
		} else {
			o[j++] = s[i];
		}
	}
	o[j] = '\0';
	*outlen = j;
	return o;
}

struct qpair {
	char *k, *v;
};

static int
qpair_cmp(const void *a, const void *b)
{
	const struct qpair *x = a, *y = b;
	int c = strcmp(x->k, y->k);

	return c != 0 ? c : strcmp(x->v, y->v);
}

/* canonical_query - each name and value decoded, re-encoded strictly, sorted */
static void
canonical_query(struct buf *b, const char *q)
{
	struct qpair *pairs = NULL;
	size_t n = 0;
	const char *p = q, *e, *eq;

	if (q == NULL || *q == '\0')
		return;
	while (*p != '\0') {
		struct buf kb, vb;
		char *d;
		size_t dl;

		e = strchr(p, '&');
		if (e == NULL)
			e = p + strlen(p);
		if (e == p) {
			p = *e ? e + 1 : e;
			continue;
		}
		eq = memchr(p, '=', (size_t)(e - p));
		buf_init(&kb);
		buf_init(&vb);
		d = pct_decode(p, (size_t)((eq ? eq : e) - p), &dl);
		sigv4_uri_encode(&kb, d, dl, 0);
		free(d);
		if (eq != NULL) {
			d = pct_decode(eq + 1, (size_t)(e - eq - 1), &dl);
			sigv4_uri_encode(&vb, d, dl, 0);
			free(d);
		}
		pairs = xrealloc(pairs, (n + 1) * sizeof(*pairs));
		pairs[n].k = buf_steal(&kb, NULL);
		pairs[n].v = buf_steal(&vb, NULL);
		n++;
		p = *e ? e + 1 : e;
	}
	if (n > 1)
		qsort(pairs, n, sizeof(*pairs), qpair_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			buf_addc(b, '&');
		buf_printf(b, "%s=%s", pairs[i].k, pairs[i].v);
		free(pairs[i].k);
		free(pairs[i].v);
	}
	free(pairs);
}

struct hdr {
	char name[128];
	const char *value;
	size_t idx;		/* keeps the order of repeated names */
};

static int
hdr_cmp(const void *a, const void *b)
{
	const struct hdr *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c != 0 ? c : (x->idx < y->idx ? -1 : x->idx > y->idx);
}

/* add_value - the value trimmed, inner runs of blanks as one space */
static void
add_value(struct buf *b, const char *v)
{
	int space = 0, any = 0;

	for (; *v != '\0'; v++) {
		if (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r') {
			space = any;
			continue;
		}
		if (space)
			buf_addc(b, ' ');
		buf_addc(b, *v);
		space = 0;
		any = 1;
	}
}

int
sigv4_sign(const struct sigv4_req *r, struct sigv4_out *out)
{
	struct hdr h[MAX_HEADERS];
	struct buf cr, sh, sts, kb;
	unsigned char k1[32], k2[32];
	char date8[9], chash[65];
	size_t n = r->nheaders;

	memset(out, 0, sizeof(*out));
	if (r->method == NULL || r->amz_date == NULL || strlen(r->amz_date) != 16 ||
	    r->region == NULL || r->service == NULL || r->access_key == NULL ||
	    r->secret_key == NULL || r->payload_hash == NULL || n > MAX_HEADERS)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const char *s = r->headers[i].name;
		size_t l = s ? strlen(s) : 0;

		if (l == 0 || l >= sizeof(h[i].name) || r->headers[i].value == NULL ||
		    strpbrk(s, " \t:\r\n") != NULL)
			return -1;
		for (size_t c = 0; c <= l; c++)
			h[i].name[c] = (char)tolower((unsigned char)s[c]);
		h[i].value = r->headers[i].value;
		h[i].idx = i;
	}
	if (n > 1)
		qsort(h, n, sizeof(h[0]), hdr_cmp);

	buf_init(&cr);
	buf_init(&sh);
	buf_printf(&cr, "%s\n", r->method);
	canonical_uri(&cr, r->path, r->normalize_path);
	buf_addc(&cr, '\n');
	canonical_query(&cr, r->query);
	buf_addc(&cr, '\n');
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && strcmp(h[i].name, h[i - 1].name) == 0) {
			buf_addc(&cr, ',');
		} else {
			if (i > 0) {
				buf_addc(&cr, '\n');
				buf_addc(&sh, ';');
			}
			buf_printf(&cr, "%s:", h[i].name);
			buf_adds(&sh, h[i].name);
		}
		add_value(&cr, h[i].value);
	}
	if (n > 0)
		buf_addc(&cr, '\n');
	buf_addc(&cr, '\n');
	buf_printf(&cr, "%s\n%s", sh.data ? sh.data : "", r->payload_hash);
	sha256_hex(cr.data, cr.len, chash);

	memcpy(date8, r->amz_date, 8);
	date8[8] = '\0';
	buf_init(&sts);
	buf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", r->amz_date, date8,
	    r->region, r->service, chash);

	/* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4"+secret, date), region), service), "aws4_request") */
	buf_init(&kb);
	buf_printf(&kb, "AWS4%s", r->secret_key);
	hmac_sha256(kb.data, kb.len, date8, 8, k1);
	OPENSSL_cleanse(kb.data, kb.len);
	buf_free(&kb);
	hmac_sha256(k1, 32, r->region, strlen(r->region), k2);
	hmac_sha256(k2, 32, r->service, strlen(r->service), k1);
	hmac_sha256(k1, 32, "aws4_request", 12, k2);
	hmac_sha256(k2, 32, sts.data, sts.len, k1);
	hex_encode(k1, 32, out->signature);
	OPENSSL_cleanse(k1, sizeof(k1));
	OPENSSL_cleanse(k2, sizeof(k2));

	out->authorization = xasprintf("AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request,"
	    " SignedHeaders=%s, Signature=%s", r->access_key, date8, r->region, r->service,
	    sh.data ? sh.data : "", out->signature);
	out->canonical = buf_steal(&cr, NULL);
	out->string_to_sign = buf_steal(&sts, NULL);
	buf_free(&sh);
	return 0;
}

void
sigv4_out_free(struct sigv4_out *out)
{
	if (out == NULL)
		return;
	free(out->canonical);
	free(out->string_to_sign);
	free(out->authorization);
	memset(out, 0, sizeof(*out));
}

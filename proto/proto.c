/*
 * proto - encode and strictly decode the doorbell message of proto.h.  A
 * decoder that accepts a message has checked every byte of it.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "proto/proto.h"

static void
put16(unsigned char *p, size_t v)
{
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

static size_t
get16(const unsigned char *p)
{
	return ((size_t)p[0] << 8) | p[1];
}

/* text_ok - printable UTF-8 bytes only (no NUL, no control bytes) */
static int
text_ok(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] == 0x7f)
			return 0;
	return 1;
}

int
proto_word_ok(const char *s, size_t max)
{
	size_t n = 0;

	for (; s[n]; n++)
		if ((unsigned char)s[n] <= 0x20 || (unsigned char)s[n] >= 0x7f)
			return 0;
	return n > 0 && (max == 0 || n < max);
}

int
proto_encode(const struct proto_msg *m, unsigned char *out, size_t outlen)
{
	size_t lk = strlen(m->kind), ln = strlen(m->ns), lm = strlen(m->name);
	size_t lh = strlen(m->hash), total = PROTO_HDR_LEN + lk + ln + lm + lh;
	unsigned char *p = out;

	if (lk > PROTO_MAX_KIND || ln > PROTO_MAX_NS || lm > PROTO_MAX_NAME ||
	    (lh != 0 && lh != 64) || total > outlen || m->type < 1 ||
	    m->type > PROTO_TYPE_MAX)
		return -1;
	memcpy(p, PROTO_MAGIC, 4);
	p[4] = PROTO_VERSION;
	p[5] = m->type;
	put16(p + 6, 0);
	for (int i = 0; i < 8; i++)
		p[8 + i] = (unsigned char)(m->item_id >> (56 - 8 * i));
	put16(p + 16, lk);
	put16(p + 18, ln);
	put16(p + 20, lm);
	put16(p + 22, lh);
	p += PROTO_HDR_LEN;
	memcpy(p, m->kind, lk);
	p += lk;
	memcpy(p, m->ns, ln);
	p += ln;
	memcpy(p, m->name, lm);
	p += lm;
	memcpy(p, m->hash, lh);
	return (int)total;
}

int
proto_decode(const void *buf, size_t len, struct proto_msg *m, char *err, size_t errlen)
{
	const unsigned char *p = buf;
	size_t lk, ln, lm, lh;

	memset(m, 0, sizeof(*m));
	if (len < PROTO_HDR_LEN) {
		snprintf(err, errlen, "message of %zu bytes is shorter than the %d-byte header",
		    len, PROTO_HDR_LEN);
		return -1;
	}
	if (memcmp(p, PROTO_MAGIC, 4) != 0) {
		snprintf(err, errlen, "bad magic (not a decod message)");
		return -1;
	}
	if (p[4] != PROTO_VERSION) {
		snprintf(err, errlen, "version %u, this build speaks %d", p[4], PROTO_VERSION);
		return -1;
	}
	if (p[5] < 1 || p[5] > PROTO_TYPE_MAX) {
		snprintf(err, errlen, "unknown message type %u", p[5]);
		return -1;
	}
	if (get16(p + 6) != 0) {
		snprintf(err, errlen, "unknown flags 0x%04zx", get16(p + 6));
		return -1;
	}
	lk = get16(p + 16);
	ln = get16(p + 18);
	lm = get16(p + 20);
	lh = get16(p + 22);
	if (lk > PROTO_MAX_KIND || ln > PROTO_MAX_NS || lm > PROTO_MAX_NAME ||
	    (lh != 0 && lh != 64)) {
		snprintf(err, errlen, "field too long (kind %zu, ns %zu, name %zu, hash %zu)",
		    lk, ln, lm, lh);
		return -1;
	}
	if (PROTO_HDR_LEN + lk + ln + lm + lh != len) {
		snprintf(err, errlen, "size %zu does not match the header's %zu", len,
		    PROTO_HDR_LEN + lk + ln + lm + lh);
		return -1;
	}
	m->type = p[5];
	for (int i = 0; i < 8; i++)
		m->item_id = (m->item_id << 8) | p[8 + i];
	if (m->type == PROTO_ITEM && m->item_id == 0) {
		snprintf(err, errlen, "item message without an item id");
		return -1;
	}
	p += PROTO_HDR_LEN;
	if (!text_ok(p, lk + ln + lm + lh)) {
		snprintf(err, errlen, "control or NUL byte in a text field");
		return -1;
	}
	memcpy(m->kind, p, lk);
	p += lk;
	memcpy(m->ns, p, ln);
	p += ln;
	memcpy(m->name, p, lm);
	p += lm;
	memcpy(m->hash, p, lh);
	for (size_t i = 0; i < lh; i++) {
		char c = m->hash[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
			snprintf(err, errlen, "hash is not lowercase hex");
			return -1;
		}
	}
	return 0;
}

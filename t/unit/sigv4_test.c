/*
 * sigv4_test - the SigV4 signer against AWS's published vectors: cases of
 * the aws-sig-v4-test-suite (credentials AKIDEXAMPLE, 20150830T123600Z,
 * us-east-1, service "service") and the S3 API reference's header-auth
 * examples (AKIAIOSFODNN7EXAMPLE, 20130524T000000Z, s3); two rows with no
 * published vector (session token, decod's own PutObject) were cross-checked
 * with npm's aws4.  Then the canonical URI and query rules, row by row.
 */
#include "config.h"

#include <string.h>

#include "common/hash.h"
#include "daemons/publisher/sigv4.h"
#include "t/tap.h"

#define SUITE_AK "AKIDEXAMPLE"
#define SUITE_SK "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define SUITE_DATE "20150830T123600Z"
#define S3_AK "AKIAIOSFODNN7EXAMPLE"
#define S3_SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define S3_DATE "20130524T000000Z"
#define S3_HOST "examplebucket.s3.amazonaws.com"
#define EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define WELCOME "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"
#define PUT_BODY "52dddc1755a9b3acadf12eab7f2ac1eb564a55de3a33822fa369f59923dddefc"

struct row {
	const char *label;
	const char *ak, *sk, *date, *region, *service;
	int normalize;
	const char *method, *path, *query;
	struct sigv4_header h[6];
	const char *payload;
	const char *signed_headers;
	const char *creq_hash;		/* last line of the string to sign; NULL: not published */
	const char *signature;
};

static const struct row rows[] = {
	{ "get-vanilla", SUITE_AK, SUITE_SK, SUITE_DATE, "us-east-1", "service", 1,
	  "GET", "/", NULL,
	  { { "Host", "example.amazonaws.com" }, { "X-Amz-Date", SUITE_DATE } }, EMPTY,
	  "host;x-amz-date",
	  "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63",
	  "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31" },
	{ "get-vanilla-query-order-key-case", SUITE_AK, SUITE_SK, SUITE_DATE, "us-east-1",
	  "service", 1, "GET", "/", "Param2=value2&Param1=value1",
	  { { "Host", "example.amazonaws.com" }, { "X-Amz-Date", SUITE_DATE } }, EMPTY,
	  "host;x-amz-date",
	  "816cd5b414d056048ba4f7c5386d6e0533120fb1fcfa93762cf0fc39e2cf19e0",
	  "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500" },
	{ "get-vanilla-query-order-value", SUITE_AK, SUITE_SK, SUITE_DATE, "us-east-1",
	  "service", 1, "GET", "/", "Param1=value2&Param1=value1",
	  { { "Host", "example.amazonaws.com" }, { "X-Amz-Date", SUITE_DATE } }, EMPTY,
	  "host;x-amz-date", NULL,
	  "5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694" },
	{ "get-unreserved", SUITE_AK, SUITE_SK, SUITE_DATE, "us-east-1", "service", 1,
	  "GET", "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", NULL,
	  { { "Host", "example.amazonaws.com" }, { "X-Amz-Date", SUITE_DATE } }, EMPTY,
	  "host;x-amz-date", NULL,
	  "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f" },
	{ "get-slashes", SUITE_AK, SUITE_SK, SUITE_DATE, "us-east-1", "service", 1,
	  "GET", "//example//", NULL,
	  { { "Host", "example.amazonaws.com" }, { "X-Amz-Date", SUITE_DATE } }, EMPTY,
	  "host;x-amz-date", NULL,
	  "9a624bd73a37c9a373b5312afbebe7a714a789de108f0bdfe846570885f57e84" },
	{ "get-header-value-trim", SUITE_AK, SUITE_SK, SUITE_DATE, "us-east-1", "service", 1,
	  "GET", "/", NULL,
	  { { "Host", "example.amazonaws.com" }, { "My-Header1", " value1" },
	    { "My-Header2", "\"a   b   c\"" }, { "X-Amz-Date", SUITE_DATE } }, EMPTY,
	  "host;my-header1;my-header2;x-amz-date", NULL,
	  "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736" },
	{ "get-header-value-order", SUITE_AK, SUITE_SK, SUITE_DATE, "us-east-1", "service", 1,
	  "GET", "/", NULL,
	  { { "Host", "example.amazonaws.com" }, { "My-Header1", "value4" },
	    { "My-Header1", "value1" }, { "My-Header1", "value3" }, { "My-Header1", "value2" },
	    { "X-Amz-Date", SUITE_DATE } }, EMPTY,
	  "host;my-header1;x-amz-date", NULL,
	  "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01" },
	{ "post-x-www-form-urlencoded", SUITE_AK, SUITE_SK, SUITE_DATE, "us-east-1",
	  "service", 1, "POST", "/", NULL,
	  { { "Content-Type", "application/x-www-form-urlencoded" },
	    { "Host", "example.amazonaws.com" }, { "X-Amz-Date", SUITE_DATE } },
	  "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e",
	  "content-type;host;x-amz-date",
	  "42a5e5bb34198acb3e84da4f085bb7927f2bc277ca766e6d19c73c2154021281",
	  "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a" },
	{ "S3 reference: GET Object with Range", S3_AK, S3_SK, S3_DATE, "us-east-1", "s3", 0,
	  "GET", "/test.txt", NULL,
	  { { "Host", S3_HOST }, { "Range", "bytes=0-9" }, { "x-amz-content-sha256", EMPTY },
	    { "x-amz-date", S3_DATE } }, EMPTY,
	  "host;range;x-amz-content-sha256;x-amz-date",
	  "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972",
	  "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41" },
	{ "S3 reference: PUT Object (key with $)", S3_AK, S3_SK, S3_DATE, "us-east-1", "s3", 0,
	  "PUT", "/test$file.text", NULL,
	  { { "Date", "Fri, 24 May 2013 00:00:00 GMT" }, { "Host", S3_HOST },
	    { "x-amz-date", S3_DATE }, { "x-amz-storage-class", "REDUCED_REDUNDANCY" },
	    { "x-amz-content-sha256", WELCOME } }, WELCOME,
	  "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
	  "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d",
	  "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd" },
	{ "S3 reference: GET Bucket lifecycle (empty value)", S3_AK, S3_SK, S3_DATE,
	  "us-east-1", "s3", 0, "GET", "/", "lifecycle",
	  { { "Host", S3_HOST }, { "x-amz-content-sha256", EMPTY }, { "x-amz-date", S3_DATE } },
	  EMPTY, "host;x-amz-content-sha256;x-amz-date", NULL,
	  "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543" },
	{ "S3 reference: list objects, query out of order", S3_AK, S3_SK, S3_DATE,
	  "us-east-1", "s3", 0, "GET", "/", "prefix=J&max-keys=2",
	  { { "Host", S3_HOST }, { "x-amz-content-sha256", EMPTY }, { "x-amz-date", S3_DATE } },
	  EMPTY, "host;x-amz-content-sha256;x-amz-date", NULL,
	  "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7" },
	/* no published vector: the same request signed by npm aws4 1.13.2 */
	{ "session token signed (aws4)", SUITE_AK, SUITE_SK, SUITE_DATE, "us-east-1",
	  "service", 1, "GET", "/", NULL,
	  { { "Host", "example.amazonaws.com" }, { "X-Amz-Date", SUITE_DATE },
	    { "X-Amz-Security-Token", "AQoDYXdzEPT//////////wEXAMPLEtoken+/=" } }, EMPTY,
	  "host;x-amz-date;x-amz-security-token", NULL,
	  "997cb7e5545b83504d691975ca486cf1a979ac27660f0b94b460ae257cbf69fb" },
	{ "decod's PutObject, path-style, key with a space (aws4)", SUITE_AK, SUITE_SK,
	  "20261204T140000Z", "eu-west-1", "s3", 0, "PUT",
	  "/decofiles/pre fix/sites-loja/loja/decofile.json", NULL,
	  { { "Content-Type", "application/json" }, { "Cache-Control", "no-cache" },
	    { "X-Amz-Date", "20261204T140000Z" }, { "X-Amz-Content-Sha256", PUT_BODY },
	    { "Host", "127.0.0.1:9000" }, { "Content-Length", "7" } }, PUT_BODY,
	  "cache-control;content-length;content-type;host;x-amz-content-sha256;x-amz-date",
	  NULL, "9512e856aa2ca60b67fddc16e103187e093ae00442c5adc5c5af6c8185bfe351" },
};

/* line - the n-th line (0-based) of s into out */
static const char *
line(const char *s, int n, char *out, size_t len)
{
	const char *e;

	while (n-- > 0 && s != NULL && (s = strchr(s, '\n')) != NULL)
		s++;
	if (s == NULL)
		return "";
	e = strchr(s, '\n');
	snprintf(out, len, "%.*s", (int)(e ? (size_t)(e - s) : strlen(s)), s);
	return out;
}

static void
vectors(void)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct sigv4_req q = { r->method, r->path, r->query, r->h, 0, r->payload,
		    r->date, r->region, r->service, r->ak, r->sk, r->normalize };
		struct sigv4_out o;
		char want[512], date8[9], got[512];

		while (q.nheaders < 6 && r->h[q.nheaders].name != NULL)
			q.nheaders++;
		if (sigv4_sign(&q, &o) != 0) {
			ok(0, "%s: signed", r->label);
			continue;
		}
		snprintf(date8, sizeof(date8), "%s", r->date);
		snprintf(want, sizeof(want), "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request,"
		    " SignedHeaders=%s, Signature=%s", r->ak, date8, r->region, r->service,
		    r->signed_headers, r->signature);
		is_str(o.authorization, want, "%s: Authorization", r->label);
		if (r->creq_hash != NULL) {
			char h[65];

			sha256_hex(o.canonical, strlen(o.canonical), h);
			is_str(h, r->creq_hash, "%s: canonical request hash", r->label);
			is_str(line(o.string_to_sign, 3, got, sizeof(got)), r->creq_hash,
			    "%s: string to sign ends with it", r->label);
		}
		ok(strstr(o.canonical, r->sk) == NULL && strstr(o.string_to_sign, r->sk) ==
		    NULL && strstr(o.authorization, r->sk) == NULL,
		    "%s: the secret appears in no output", r->label);
		sigv4_out_free(&o);
	}
}

/* canon - the canonical request's URI (line 1) or query (line 2) */
static const char *
canon(const char *path, const char *query, int normalize, int ln, char *out, size_t len)
{
	struct sigv4_header h[] = { { "host", "h" } };
	struct sigv4_req q = { "GET", path, query, h, 1, EMPTY, SUITE_DATE, "r", "s3", "a",
	    "s", normalize };
	struct sigv4_out o;

	if (sigv4_sign(&q, &o) != 0)
		return "(error)";
	line(o.canonical, ln, out, len);
	sigv4_out_free(&o);
	return out;
}

static void
canonical_rules(void)
{
	static const struct {
		const char *label, *path;
		int normalize;
		const char *want;
	} uris[] = {
		{ "get-space (suite)", "/example space/", 1, "/example%20space/" },
		{ "get-utf8 (suite)", "/\xe1\x88\xb4", 1, "/%E1%88%B4" },
		{ "get-slash-dot-slash (suite)", "/./", 1, "/" },
		{ "get-relative-relative (suite)", "/example1/example2/../..", 1, "/" },
		{ "s3: no normalization", "//a/./b/", 0, "//a/./b/" },
		{ "s3: key bytes encoded once", "/b/pre fix/x+y(1)~.json", 0,
		  "/b/pre%20fix/x%2By%281%29~.json" },
		{ "empty path is the root", "", 0, "/" },
	};
	static const struct {
		const char *label, *query, *want;
	} queries[] = {
		{ "names sorted", "Param2=value2&Param1=value1", "Param1=value1&Param2=value2" },
		{ "sorted bytewise, not by case", "b=1&B=2&a=3", "B=2&a=3&b=1" },
		{ "repeated name sorted by value", "a=10&a=9", "a=10&a=9" },
		{ "values compared encoded", "x=a.b&x=a%2Fb", "x=a%2Fb&x=a.b" },
		{ "plus is a plus", "q=a+b", "q=a%2Bb" },
		{ "lower-case escapes upper-cased", "q=a%2fb", "q=a%2Fb" },
		{ "name without value", "b&a=1", "a=1&b=" },
		{ "equals inside a value", "a=1=2", "a=1%3D2" },
		{ "reserved bytes encoded", "k=a b/c:d", "k=a%20b%2Fc%3Ad" },
		{ "empty pieces dropped", "&a=1&&", "a=1" },
	};
	char out[256];

	for (size_t i = 0; i < sizeof(uris) / sizeof(uris[0]); i++)
		is_str(canon(uris[i].path, NULL, uris[i].normalize, 1, out, sizeof(out)),
		    uris[i].want, "canonical URI: %s", uris[i].label);
	for (size_t i = 0; i < sizeof(queries) / sizeof(queries[0]); i++)
		is_str(canon("/", queries[i].query, 0, 2, out, sizeof(out)), queries[i].want,
		    "canonical query: %s", queries[i].label);
}

static void
refusals(void)
{
	struct sigv4_header bad[] = { { "bad name", "v" } };
	struct sigv4_req q = { "GET", "/", NULL, bad, 1, EMPTY, SUITE_DATE, "r", "s3", "a",
	    "s", 0 };
	struct sigv4_out o;
	char d[17];

	is_int(sigv4_sign(&q, &o), -1, "a header name with a space is refused");
	q.nheaders = 0;
	q.amz_date = "2015-08-30";
	is_int(sigv4_sign(&q, &o), -1, "a malformed date is refused");
	sigv4_amz_date(1440938160, d);
	is_str(d, SUITE_DATE, "amz date from unix seconds");
}

int
main(void)
{
	vectors();
	canonical_rules();
	refusals();
	return done_testing();
}

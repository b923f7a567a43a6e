/*
 * s3_test - the S3 client's pure parts, table-driven: the request URL
 * (path-style with AWS_ENDPOINT_URL, virtual-host without), endpoint and
 * bucket refusals, the error code and message out of S3's error XML, and
 * the credentials look-up (environment first, then a profile of the
 * credentials file, re-read when it changes) without printing a secret.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemons/publisher/s3.h"
#include "t/tap.h"

static void
urls(void)
{
	static const struct {
		const char *label, *bucket, *region, *endpoint, *key, *want;
	} rows[] = {
		{ "AWS: virtual-host", "cdn-configs", "sa-east-1", "",
		  "sites-loja/loja/decofile.json",
		  "https://cdn-configs.s3.sa-east-1.amazonaws.com/sites-loja/loja/decofile.json" },
		{ "AWS: region defaults to us-east-1", "b", "", NULL, "k.json",
		  "https://b.s3.us-east-1.amazonaws.com/k.json" },
		{ "endpoint: path-style", "decod", "us-east-1", "http://127.0.0.1:9000",
		  "p/ns/d/decofile.json", "http://127.0.0.1:9000/decod/p/ns/d/decofile.json" },
		{ "endpoint with a path and a trailing slash", "b", "r",
		  "https://minio.example/s3/", "ns/d/decofile.json",
		  "https://minio.example/s3/b/ns/d/decofile.json" },
		{ "endpoint host lower-cased", "b", "r", "http://MinIO:9000", "k",
		  "http://minio:9000/b/k" },
		{ "key bytes encoded once, slashes kept", "b", "r", "http://h",
		  "pre fix/ns/d+x/decofile.json", "http://h/b/pre%20fix/ns/d%2Bx/decofile.json" },
	};
	char out[512], err[256];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct s3_config cf = { rows[i].bucket, rows[i].region, rows[i].endpoint, "", "",
		    0, 0, 0 };
		struct s3_client *c = s3_client_new(&cf, err, sizeof(err));

		if (c == NULL) {
			ok(0, "%s: client (%s)", rows[i].label, err);
			continue;
		}
		is_int(s3_object_url(c, rows[i].key, out, sizeof(out)), 0, "%s: fits", rows[i].label);
		is_str(out, rows[i].want, "%s", rows[i].label);
		s3_client_free(c);
	}
}

static void
refusals(void)
{
	static const struct {
		const char *label, *bucket, *endpoint, *want;
	} rows[] = {
		{ "no bucket", "", "", "no bucket configured (DECOFILE_S3_BUCKET)" },
		{ "bucket with a slash", "a/b", "", "bucket name \"a/b\" is not valid" },
		{ "endpoint not http(s)", "b", "ftp://h",
		  "AWS_ENDPOINT_URL (s3_endpoint) is not an http(s) URL without user, query or"
		  " fragment" },
		{ "endpoint with user info", "b", "http://u:p@h", NULL },
		{ "endpoint with a query", "b", "http://h/?x=1", NULL },
		{ "endpoint without a host", "b", "http:///x", NULL },
	};
	char err[256];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct s3_config cf = { rows[i].bucket, "r", rows[i].endpoint, "", "", 0, 0, 0 };
		struct s3_client *c;

		err[0] = '\0';
		c = s3_client_new(&cf, err, sizeof(err));
		ok(c == NULL, "%s: refused", rows[i].label);
		if (rows[i].want != NULL)
			is_str(err, rows[i].want, "%s: says why", rows[i].label);
		ok(strstr(err, "u:p") == NULL, "%s: the endpoint is not echoed", rows[i].label);
		s3_client_free(c);
	}
}

static void
errors(void)
{
	static const struct {
		const char *label, *xml, *code, *msg;
	} rows[] = {
		{ "SignatureDoesNotMatch",
		  "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SignatureDoesNotMatch"
		  "</Code><Message>The request signature we calculated does not match the"
		  " signature you provided. Check your key and signing method.</Message>"
		  "<AWSAccessKeyId>AKID</AWSAccessKeyId><StringToSign>AWS4-HMAC-SHA256\n...</StringToSign>"
		  "<RequestId>4442587FB7D0A2F9</RequestId></Error>",
		  "SignatureDoesNotMatch",
		  "The request signature we calculated does not match the signature you"
		  " provided. Check your key and signing method." },
		{ "NoSuchBucket", "<Error><Code>NoSuchBucket</Code><Message>The specified bucket"
		  " does not exist</Message><BucketName>x</BucketName></Error>", "NoSuchBucket",
		  "The specified bucket does not exist" },
		{ "entities undone", "<Error><Code>InvalidArgument</Code><Message>a &amp; b &lt;c&gt;"
		  " &quot;d&quot; &apos;e&apos;</Message></Error>", "InvalidArgument",
		  "a & b <c> \"d\" 'e'" },
		{ "control bytes become spaces", "<Error><Code>X</Code><Message>a\nb\tc</Message></Error>",
		  "X", "a b c" },
		{ "no error document", "<html>Bad Gateway</html>", "", "" },
		{ "unterminated", "<Error><Code>Slow", "", "" },
		{ "empty", "", "", "" },
	};
	char code[64], msg[256], tiny[8];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		s3_error_code(rows[i].xml, strlen(rows[i].xml), code, sizeof(code), msg,
		    sizeof(msg));
		is_str(code, rows[i].code, "error XML %s: code", rows[i].label);
		is_str(msg, rows[i].msg, "error XML %s: message", rows[i].label);
	}
	s3_error_code(rows[0].xml, strlen(rows[0].xml), tiny, sizeof(tiny), msg, sizeof(msg));
	is_str(tiny, "Signatu", "a long code is cut to the buffer");
}

static void
credentials(void)
{
	char dir[] = "/tmp/s3_test.XXXXXX", path[256], err[512];
	struct s3_config cf = { "b", "r", "http://127.0.0.1:9", path, "deploy", 0, 0, 0 };
	struct s3_client *c;
	FILE *f;

	if (mkdtemp(dir) == NULL) {
		ok(0, "mkdtemp");
		return;
	}
	snprintf(path, sizeof(path), "%s/credentials", dir);
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("AWS_SESSION_TOKEN");
	c = s3_client_new(&cf, err, sizeof(err));
	ok(c != NULL, "client");
	if (c == NULL)
		return;
	is_int(s3_credentials_ok(c, err, sizeof(err)), -1, "no file, no environment: none");
	ok(strstr(err, "profile [deploy]") != NULL && strstr(err, path) != NULL,
	    "the reason names the profile and the file");
	f = fopen(path, "w");
	fprintf(f, "[default]\naws_access_key_id = A\naws_secret_access_key = S\n");
	fclose(f);
	is_int(s3_credentials_ok(c, err, sizeof(err)), -1, "another profile only: none");
	sleep(1);	/* a new mtime, even on coarse clocks */
	f = fopen(path, "w");
	fprintf(f, "# rotated\n[deploy]\n  aws_access_key_id=AKID \naws_secret_access_key = "
	    "topsecret\n");
	fclose(f);
	is_int(s3_credentials_ok(c, err, sizeof(err)), 0, "the file is re-read when it changes");
	unlink(path);
	is_int(s3_credentials_ok(c, err, sizeof(err)), -1, "file gone: none");
	ok(strstr(err, "topsecret") == NULL, "no secret in the reason");
	setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
	is_int(s3_credentials_ok(c, err, sizeof(err)), 0, "environment");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	is_int(s3_credentials_ok(c, err, sizeof(err)), -1, "a key id alone is not enough");
	s3_client_free(c);
	rmdir(dir);
}

int
main(void)
{
	urls();
	refusals();
	errors();
	credentials();
	return done_testing();
}

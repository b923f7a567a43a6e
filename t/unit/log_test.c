/* log_test - key=value and JSON lines, quoting, secret redaction */
#include "config.h"

#include "common/log.h"
#include "t/tap.h"

int
main(void)
{
	char line[1024];
	const char *kv[] = { "stage", "renderer", "token", "s3cr3t", "msg2", "a b\"c" };
	const char *kv2[] = { "Authorization", "Token abc", "DECO_RELEASE_RELOAD_TOKEN", "x" };

	log_init("test", LOG_DEBUG, LOG_FMT_KV);
	log_format_line(line, sizeof(line), LOG_INFO, "hello world", kv, 6);
	ok(strstr(line, "level=info") != NULL, "kv: level");
	ok(strstr(line, "msg=\"hello world\"") != NULL, "kv: message quoted when it has a space");
	ok(strstr(line, "stage=renderer") != NULL, "kv: plain value unquoted");
	ok(strstr(line, "s3cr3t") == NULL && strstr(line, "token=<redacted>") != NULL,
	    "kv: a token is redacted");
	ok(strstr(line, "msg2=\"a b\\\"c\"") != NULL, "kv: quotes escaped");
	ok(line[strlen(line) - 1] == '\n' && strchr(line, '\n') == line + strlen(line) - 1,
	    "kv: exactly one line");
	log_format_line(line, sizeof(line), LOG_WARN, "x", kv2, 4);
	ok(strstr(line, "abc") == NULL, "Authorization header value never shown");
	log_init("test", LOG_DEBUG, LOG_FMT_JSON);
	log_format_line(line, sizeof(line), LOG_ERROR, "multi\nline", kv, 6);
	ok(line[0] == '{' && strstr(line, "\"level\":\"error\"") != NULL, "json: object");
	ok(strstr(line, "\"msg\":\"multi\\nline\"") != NULL, "json: newline escaped");
	ok(strstr(line, "s3cr3t") == NULL, "json: token redacted");
	is_int(log_parse_level("warn"), LOG_WARN, "parse level warn");
	is_int(log_parse_level("loud"), -1, "unknown level refused");
	is_int(log_parse_format("json"), LOG_FMT_JSON, "parse format json");
	ok(log_is_secret_key("VALKEY_ADMIN_PASSWORD"), "password keys are secret");
	ok(!log_is_secret_key("stage"), "ordinary keys are not");
	return done_testing();
}

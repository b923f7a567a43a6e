/* conf_test - file parsing with line numbers, types, precedence, flags */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/util.h"
#include "t/tap.h"

static char dir[] = "/tmp/conf_test.XXXXXX";

/*
 * test_bad_numbers - every duration and size setting refuses non-finite,
 * negative and overflowing values, and the error names the setting
 */
static void
test_bad_numbers(void)
{
	static const char *const bad[] = {
		"nan", "inf", "-inf", "infinity", "-1", "-0", "1e400", "0x10",
		"99999999999999999999999h", "1e30",
	};
	const struct conf_setting *s;
	struct conf *cf = conf_new();
	char err[256];

	for (s = conf_settings(); s->name != NULL; s++) {
		if (s->type != CONF_DURATION && s->type != CONF_SIZE)
			continue;
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			err[0] = '\0';
			ok(conf_set(cf, s->name, bad[i], err, sizeof(err)) == -1 &&
			    strncmp(err, s->name, strlen(s->name)) == 0,
			    "%s = %s refused, naming the setting", s->name, bad[i]);
		}
	}
	conf_free(cf);
}

static char *
write_conf(const char *name, const char *text)
{
	char *path = xasprintf("%s/%s", dir, name);

	write_file_atomic(path, text, strlen(text), 0600);
	return path;
}

int
main(void)
{
	struct conf *cf;
	char *path, *errs = NULL, err[256];
	size_t errlen = 0;
	FILE *ef;
	int bad;

	if (mkdtemp(dir) == NULL)
		return 1;
	path = write_conf("good.conf", "# comment\n\nstate_dir = /tmp/x\n"
	    "stages = \"fetcher renderer\"\nnotify_concurrency=100 # inline comment\n"
	    "rescan_interval = 250ms\n");
	cf = conf_new();
	is_int(conf_load_file(cf, path, 1, stderr), 0, "good file loads");
	is_str(conf_get(cf, "state_dir"), "/tmp/x", "string setting");
	is_str(conf_get(cf, "stages"), "fetcher renderer", "quoted value");
	is_int(conf_get_int(cf, "notify_concurrency"), 100, "int with a trailing comment");
	is_int(conf_get_ms(cf, "rescan_interval"), 250, "duration");
	is_str(conf_get(cf, "store"), "local:/tmp/x/store", "default expands ${state_dir}");
	is_int(conf_get_size(cf, "compress_threshold"), 2500000, "size default");
	free(path);
	conf_free(cf);

	/* every bad line is named with its number */
	path = write_conf("bad.conf", "state_dir = /tmp/y\nno equals sign here\n"
	    "notify_concurrency = lots\nbogus_setting = 1\nrescan_interval = 5 parsecs\n"
	    "notify_concurrency = 0\nlog_level = loud\n");
	ef = open_memstream(&errs, &errlen);
	cf = conf_new();
	bad = conf_load_file(cf, path, 1, ef);
	fclose(ef);
	is_int(bad, 6, "six bad lines counted");
	ok(strstr(errs, "bad.conf:2: expected \"name = value\"") != NULL, "line 2 named");
	ok(strstr(errs, "bad.conf:3: notify_concurrency: \"lots\" is not a whole number") != NULL,
	    "line 3 named with the setting");
	ok(strstr(errs, "bad.conf:4: unknown setting \"bogus_setting\"") != NULL, "line 4 named");
	ok(strstr(errs, "bad.conf:5: rescan_interval") != NULL, "line 5 named");
	ok(strstr(errs, "bad.conf:6: notify_concurrency: 0 is out of range") != NULL,
	    "line 6 range");
	ok(strstr(errs, "bad.conf:7: log_level") != NULL, "line 7 named");
	is_str(conf_get(cf, "state_dir"), "/tmp/y", "good lines still apply");
	free(errs);
	conf_free(cf);

	/* precedence: file < environment < flags */
	{
		char *argv[] = { "prog", "-c", path, "--state-dir", "/flag", "extra", NULL };
		int argc = 6;

		free(path);
		path = write_conf("p.conf", "state_dir = /file\nlog_level = warn\n"
		    "notify_timeout = 5s\n");
		argv[2] = path;
		setenv("DECOD_LOG_LEVEL", "debug", 1);
		setenv("DECOD_NOTIFY_TIMEOUT", "7s", 1);
		cf = conf_from_args(&argc, argv);
		ok(cf != NULL, "conf_from_args");
		is_str(conf_get(cf, "state_dir"), "/flag", "flag beats file");
		is_str(conf_get(cf, "log_level"), "debug", "environment beats file");
		is_int(conf_get_ms(cf, "notify_timeout"), 7000, "environment duration");
		is_int(argc, 2, "unknown arguments left for the program");
		is_str(argv[1], "extra", "left argument kept");
		conf_free(cf);
		unsetenv("DECOD_LOG_LEVEL");
		unsetenv("DECOD_NOTIFY_TIMEOUT");
	}
	{
		char *argv[] = { "prog", "-c", path, "--notify-attempts=abc", NULL };
		int argc = 4;

		ok(conf_from_args(&argc, argv) == NULL, "a bad flag value is refused");
	}
	{
		char *argv[] = { "prog", "-c", "/nonexistent/decod.conf", NULL };
		int argc = 3;

		ok(conf_from_args(&argc, argv) == NULL, "a named missing file is an error");
	}
	cf = conf_new();
	ok(conf_set(cf, "brotli_quality", "12", err, sizeof(err)) == -1 &&
	    strstr(err, "brotli_quality") != NULL, "range error names the setting");
	conf_free(cf);
	test_bad_numbers();
	free(path);
	rm_rf(dir);
	return done_testing();
}

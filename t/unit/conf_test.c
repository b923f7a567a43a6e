/* conf_test - file parsing with line numbers, types, precedence, flags, bad numbers, readers */
#include "config.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>

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

/*
 * test_readers - the readers column: who reads what, what a stage's
 * digest holds, and that a read the table does not declare aborts under
 * DECOD_CONF_STRICT=1 (the test suite's setting, so every integration
 * test that runs a stage checks the table against the code)
 */
static void
test_readers(void)
{
	static const struct { const char *setting, *who; int reads; } rows[] = {
		{ "journal_retention", "renderer", 1 },
		{ "journal_retention", "fetcher", 0 },
		{ "journal_retention", "decod", 0 },
		{ "housekeeping_interval", "renderer", 1 },
		{ "default_target", "renderer", 1 },
		{ "default_target", "publisher", 1 },
		{ "default_target", "notifier", 0 },
		{ "store", "notifier", 1 },		/* "*": every stage */
		{ "store_prefix", "decod", 0 },		/* ... but not the supervisor */
		{ "store", "decod", 1 },		/* leader election: local store only */
		{ "stages", "decod", 1 },
		{ "stages", "renderer", 0 },
		{ "log_level", "decod", 1 },
		{ "log_level", "publisher", 1 },
		{ "addr_renderer", "fetcher", 1 },
		{ "addr_renderer", "fetch", 0 },	/* whole words only */
		{ "addr_renderer", "renderer2", 0 },
	};
	const struct conf_setting *s;
	struct conf *cf = conf_new();
	char *d, *l, err[256];
	int undeclared = 0;
	pid_t pid;
	int status;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		for (s = conf_settings(); s->name != NULL; s++)
			if (strcmp(s->name, rows[i].setting) == 0)
				break;
		ok(s->name != NULL && conf_reads(s, rows[i].who) == rows[i].reads,
		    "%s %s %s", rows[i].who, rows[i].reads ? "reads" : "does not read",
		    rows[i].setting);
	}
	for (s = conf_settings(); s->name != NULL; s++)
		if (s->readers == NULL || s->readers[0] == '\0')
			undeclared++;
	is_int(undeclared, 0, "every setting names its readers");

	conf_set(cf, "journal_retention", "2h", err, sizeof(err));
	conf_set(cf, "brotli_quality", "5", err, sizeof(err));
	d = conf_stage_digest(cf, "renderer", 0);
	l = conf_stage_digest(cf, "renderer", 1);
	ok(strstr(d, "brotli_quality=5\n") != NULL, "renderer's restart digest has brotli_quality");
	ok(strstr(d, "journal_retention") == NULL, "... but not the live journal_retention");
	ok(strstr(l, "journal_retention=2h\n") != NULL, "renderer's live digest has it");
	ok(strstr(d, "poll_period") == NULL && strstr(d, "notify_timeout") == NULL,
	    "... and nothing only other stages read");
	free(d);
	free(l);
	d = conf_stage_digest(cf, "fetcher", 0);
	l = conf_stage_digest(cf, "fetcher", 1);
	ok(strstr(d, "brotli_quality") == NULL && strstr(l, "journal_retention") == NULL,
	    "the fetcher's digests do not change with the renderer's settings");
	free(d);
	free(l);
	conf_free(cf);

	/* a read the table declares is fine; one it does not aborts */
	fflush(stdout);
	if ((pid = fork()) == 0) {
		cf = conf_new();
		setenv("DECOD_CONF_STRICT", "1", 1);
		conf_set_reader(cf, "renderer");
		(void)conf_get(cf, "journal_retention");
		(void)conf_get(cf, "store");
		_exit(0);
	}
	ok(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0, "declared reads pass under DECOD_CONF_STRICT=1");
	fflush(stdout);
	if ((pid = fork()) == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(devnull, 2);
		cf = conf_new();
		setenv("DECOD_CONF_STRICT", "1", 1);
		conf_set_reader(cf, "notifier");
		(void)conf_get(cf, "journal_retention");
		_exit(0);
	}
	ok(pid > 0 && waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) &&
	    WTERMSIG(status) == SIGABRT, "an undeclared read aborts under DECOD_CONF_STRICT=1");
	fflush(stdout);
	if ((pid = fork()) == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(devnull, 2);
		cf = conf_new();
		unsetenv("DECOD_CONF_STRICT");
		conf_set_reader(cf, "notifier");
		(void)conf_get(cf, "journal_retention");
		_exit(0);
	}
	ok(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0, "... and only logs without it");
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
	test_readers();
	free(path);
	rm_rf(dir);
	return done_testing();
}

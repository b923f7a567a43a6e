/*
 * conf - the settings table and the three sources that fill it (file,
 * environment, flags).  Values are kept as strings after their type has
 * been checked, so reading a setting can never fail later; "${state_dir}"
 * in a default expands to the current value of state_dir.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/log.h"
#include "common/util.h"

#define DEFAULT_CONFIG DECOD_SYSCONFDIR "/decod/decod.conf"

#define settings conf_table
#define NSETTINGS conf_table_len


static const char *value_of(const struct conf *cf, int i);

struct conf {
	char *reader;			/* conf_set_reader, or NULL */
	char **val;			/* set values; NULL: default */
	char **expanded;		/* cache of conf_get results */
	char path[1024];
};

static int
find(const char *name)
{
	for (size_t i = 0; i < NSETTINGS; i++)
		if (strcmp(settings[i].name, name) == 0)
			return (int)i;
	return -1;
}

const struct conf_setting *
conf_settings(void)
{
	return settings;
}

struct conf *
conf_new(void)
{
	struct conf *cf = xcalloc(1, sizeof(*cf));

	cf->val = xcalloc(NSETTINGS, sizeof(char *));
	cf->expanded = xcalloc(NSETTINGS, sizeof(char *));
	return cf;
}

void
conf_free(struct conf *cf)
{
	if (cf == NULL)
		return;
	for (size_t i = 0; i < NSETTINGS; i++) {
		free(cf->val[i]);
		free(cf->expanded[i]);
	}
	free(cf->val);
	free(cf->expanded);
	free(cf->reader);
	free(cf);
}

int
conf_reads(const struct conf_setting *s, const char *who)
{
	const char *p = s->readers;
	size_t n = strlen(who);

	if (p == NULL)
		return 0;
	while (*p != '\0') {
		size_t len = strcspn(p, " ");

		if (len == 1 && *p == '*' && strcmp(who, "decod") != 0)
			return 1;
		if (len == n && strncmp(p, who, n) == 0)
			return 1;
		p += len;
		p += strspn(p, " ");
	}
	return 0;
}

void
conf_set_reader(struct conf *cf, const char *who)
{
	free(cf->reader);
	cf->reader = who != NULL ? xstrdup(who) : NULL;
}

/* check_reader - complain about a read the table does not declare */
static void
check_reader(const struct conf *cf, int i)
{
	const char *strict;

	if (cf->reader == NULL || conf_reads(&settings[i], cf->reader))
		return;
	log_kv(LOG_ERROR, "setting read by a program not named in its readers",
	    "setting", settings[i].name, "reader", cf->reader, NULL);
	if ((strict = getenv("DECOD_CONF_STRICT")) != NULL && strcmp(strict, "1") == 0)
		abort();
}

char *
conf_stage_digest(const struct conf *cf, const char *who, int live)
{
	struct buf b;

	buf_init(&b);
	buf_adds(&b, "");
	for (size_t i = 0; i < NSETTINGS; i++) {
		if (!conf_reads(&settings[i], who))
			continue;
		if (((settings[i].flags & CONF_LIVE) != 0) != (live != 0))
			continue;
		buf_printf(&b, "%s=%s\n", settings[i].name, value_of(cf, (int)i));
	}
	return buf_steal(&b, NULL);
}

const char *
conf_path(const struct conf *cf)
{
	return cf->path;
}

/* check - validate value for setting i; 0 or -1 with err */
static int
check(int i, const char *value, char *err, size_t errlen)
{
	const struct conf_setting *s = &settings[i];
	int64_t ms;
	uint64_t bytes;
	long long n;
	char *end;

	switch (s->type) {
	case CONF_STR:
	case CONF_LIST:
		return 0;
	case CONF_INT:
		errno = 0;
		n = strtoll(value, &end, 10);
		if (errno != 0 || *value == '\0' || *end != '\0') {
			snprintf(err, errlen, "%s: \"%s\" is not a whole number", s->name, value);
			return -1;
		}
		if (s->max > s->min && (n < s->min || n > s->max)) {
			snprintf(err, errlen, "%s: %lld is out of range %lld..%lld",
			    s->name, n, s->min, s->max);
			return -1;
		}
		return 0;
	case CONF_DURATION:
		if (parse_duration_ms(value, &ms) < 0) {
			snprintf(err, errlen, "%s: \"%s\" is not a duration (like 500ms, 15s, 2m, 1h)",
			    s->name, value);
			return -1;
		}
		if (ms < s->min || (s->max > s->min && ms > s->max)) {
			snprintf(err, errlen, "%s: %s is out of range", s->name, value);
			return -1;
		}
		return 0;
	case CONF_SIZE:
		if (parse_size(value, &bytes) < 0) {
			snprintf(err, errlen, "%s: \"%s\" is not a size (like 4096, 2.5MB, 1MiB)",
			    s->name, value);
			return -1;
		}
		return 0;
	case CONF_BOOL:
		if (strcmp(value, "true") && strcmp(value, "false") &&
		    strcmp(value, "yes") && strcmp(value, "no") &&
		    strcmp(value, "1") && strcmp(value, "0") &&
		    strcmp(value, "on") && strcmp(value, "off")) {
			snprintf(err, errlen, "%s: \"%s\" is not true or false", s->name, value);
			return -1;
		}
		return 0;
	}
	return 0;
}

int
conf_set(struct conf *cf, const char *name, const char *value, char *err, size_t errlen)
{
	int i = find(name);

	if (i < 0) {
		snprintf(err, errlen, "unknown setting \"%s\"", name);
		return -1;
	}
	if (check(i, value, err, errlen) < 0)
		return -1;
	if (strcmp(name, "log_level") == 0 && log_parse_level(value) < 0) {
		snprintf(err, errlen, "log_level: \"%s\" is not debug, info, warn or error", value);
		return -1;
	}
	if (strcmp(name, "log_format") == 0 && log_parse_format(value) < 0) {
		snprintf(err, errlen, "log_format: \"%s\" is not kv or json", value);
		return -1;
	}
	free(cf->val[i]);
	cf->val[i] = xstrdup(value);
	for (size_t k = 0; k < NSETTINGS; k++) {
		free(cf->expanded[k]);
		cf->expanded[k] = NULL;
	}
	return 0;
}

/* expand - replace ${name} with the value of setting name */
static char *
expand(const struct conf *cf, const char *v, int depth)
{
	struct buf b;
	const char *p = v, *open, *close;
	char name[64];

	buf_init(&b);
	buf_adds(&b, "");
	while ((open = strstr(p, "${")) != NULL && (close = strchr(open, '}')) != NULL &&
	    depth < 4) {
		buf_add(&b, p, (size_t)(open - p));
		snprintf(name, sizeof(name), "%.*s", (int)(close - open - 2), open + 2);
		if (find(name) >= 0) {
			int i = find(name);
			const char *raw = cf->val[i] ? cf->val[i] : settings[i].def;
			char *sub = expand(cf, raw ? raw : "", depth + 1);

			buf_adds(&b, sub);
			free(sub);
		}
		p = close + 1;
	}
	buf_adds(&b, p);
	return buf_steal(&b, NULL);
}

const char *
conf_get(const struct conf *cf, const char *name)
{
	int i = find(name);

	if (i < 0)
		fatal("conf_get: unknown setting \"%s\" (a bug)", name);
	check_reader(cf, i);
	return value_of(cf, i);
}

const char *
conf_get_for(const struct conf *cf, const char *name, const char *who)
{
	int i = find(name);

	if (i < 0)
		fatal("conf_get_for: unknown setting \"%s\" (a bug)", name);
	if (!conf_reads(&settings[i], who))
		fatal("conf_get_for: %s does not read \"%s\" (a bug)", who, name);
	return value_of(cf, i);
}

/* value_of - setting i's value, expanded and cached; no reader check */
static const char *
value_of(const struct conf *cf, int i)
{
	struct conf *mut = (struct conf *)cf;
	const char *raw;

	if (cf->expanded[i] != NULL)
		return cf->expanded[i];
	raw = cf->val[i] ? cf->val[i] : settings[i].def;
	mut->expanded[i] = expand(cf, raw ? raw : "", 0);
	return cf->expanded[i];
}

int64_t
conf_get_int(const struct conf *cf, const char *name)
{
	return strtoll(conf_get(cf, name), NULL, 10);
}

int64_t
conf_get_ms(const struct conf *cf, const char *name)
{
	int64_t ms = 0;

	(void)parse_duration_ms(conf_get(cf, name), &ms);
	return ms;
}

uint64_t
conf_get_size(const struct conf *cf, const char *name)
{
	uint64_t n = 0;

	(void)parse_size(conf_get(cf, name), &n);
	return n;
}

int
conf_get_bool(const struct conf *cf, const char *name)
{
	const char *v = conf_get(cf, name);

	return strcmp(v, "true") == 0 || strcmp(v, "yes") == 0 ||
	    strcmp(v, "1") == 0 || strcmp(v, "on") == 0;
}

/* trim - strip white space at both ends in place */
static char *
trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

int
conf_load_file(struct conf *cf, const char *path, int required, FILE *errs)
{
	FILE *f;
	char line[4096], err[512];
	int lineno = 0, bad = 0;

	if ((f = fopen(path, "r")) == NULL) {
		if (!required && errno == ENOENT)
			return 0;
		if (errs)
			fprintf(errs, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	snprintf(cf->path, sizeof(cf->path), "%s", path);
	while (fgets(line, sizeof(line), f) != NULL) {
		char *p, *eq, *name, *value;
		size_t vl;

		lineno++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			if (errs)
				fprintf(errs, "%s:%d: line too long\n", path, lineno);
			bad++;
			while (fgets(line, sizeof(line), f) && !strchr(line, '\n'))
				;
			continue;
		}
		p = trim(line);
		if (*p == '\0' || *p == '#')
			continue;
		if ((eq = strchr(p, '=')) == NULL) {
			if (errs)
				fprintf(errs, "%s:%d: expected \"name = value\", got \"%s\"\n",
				    path, lineno, p);
			bad++;
			continue;
		}
		*eq = '\0';
		name = trim(p);
		value = trim(eq + 1);
		vl = strlen(value);
		if (vl >= 2 && (value[0] == '"' || value[0] == '\'') && value[vl - 1] == value[0]) {
			value[vl - 1] = '\0';
			value++;
		} else {
			/* a comment after an unquoted value */
			char *hash = strstr(value, " #");

			if (hash != NULL) {
				*hash = '\0';
				value = trim(value);
			}
		}
		if (conf_set(cf, name, value, err, sizeof(err)) < 0) {
			if (errs)
				fprintf(errs, "%s:%d: %s\n", path, lineno, err);
			bad++;
		}
	}
	fclose(f);
	return bad;
}

int
conf_load_env(struct conf *cf, FILE *errs)
{
	char envname[128], err[512];
	const char *v;
	int bad = 0;

	for (size_t i = 0; i < NSETTINGS; i++) {
		size_t k;

		snprintf(envname, sizeof(envname), "DECOD_");
		for (k = 0; settings[i].name[k] && k + 7 < sizeof(envname); k++)
			envname[6 + k] = (char)toupper((unsigned char)settings[i].name[k]);
		envname[6 + k] = '\0';
		v = getenv(envname);
		if (v == NULL && settings[i].env != NULL)
			v = getenv(settings[i].env);
		if (v == NULL || strcmp(envname, "DECOD_CONFIG") == 0)
			continue;
		if (conf_set(cf, settings[i].name, v, err, sizeof(err)) < 0) {
			if (errs)
				fprintf(errs, "environment %s: %s\n", envname, err);
			bad++;
		}
	}
	return bad;
}

/* flag_name - "--state-dir" -> "state_dir" into out; 0 or -1 */
static int
flag_name(const char *arg, char *out, size_t len)
{
	size_t i;

	if (strncmp(arg, "--", 2) != 0)
		return -1;
	arg += 2;
	for (i = 0; arg[i] && arg[i] != '=' && i < len - 1; i++)
		out[i] = arg[i] == '-' ? '_' : arg[i];
	out[i] = '\0';
	return find(out) >= 0 ? 0 : -1;
}

struct conf *
conf_from_args(int *argc, char **argv)
{
	struct conf *cf = conf_new();
	const char *path = getenv("DECOD_CONFIG");
	int required = path != NULL, out = 1, bad;
	char name[128], err[512];

	for (int i = 1; i < *argc; i++) {
		if ((strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) &&
		    i + 1 < *argc) {
			path = argv[++i];
			required = 1;
		} else if (strncmp(argv[i], "--config=", 9) == 0) {
			path = argv[i] + 9;
			required = 1;
		}
	}
	if (path == NULL)
		path = DEFAULT_CONFIG;
	bad = conf_load_file(cf, path, required, stderr);
	if (bad != 0 || conf_load_env(cf, stderr) != 0)
		goto fail;
	for (int i = 1; i < *argc; i++) {
		const char *eq;

		if ((strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) &&
		    i + 1 < *argc) {
			i++;
			continue;
		}
		if (strncmp(argv[i], "--config=", 9) == 0)
			continue;
		if (strcmp(argv[i], "--") == 0) {
			while (i < *argc)
				argv[out++] = argv[i++];
			break;
		}
		if (flag_name(argv[i], name, sizeof(name)) < 0) {
			argv[out++] = argv[i];
			continue;
		}
		if ((eq = strchr(argv[i], '=')) != NULL) {
			if (conf_set(cf, name, eq + 1, err, sizeof(err)) < 0)
				goto flagfail;
		} else if (i + 1 < *argc) {
			if (conf_set(cf, name, argv[++i], err, sizeof(err)) < 0)
				goto flagfail;
		} else {
			snprintf(err, sizeof(err), "%s needs a value", argv[i]);
			goto flagfail;
		}
	}
	argv[out] = NULL;
	*argc = out;
	return cf;
flagfail:
	fprintf(stderr, "%s: %s\n", argv[0], err);
fail:
	conf_free(cf);
	return NULL;
}

void
conf_print_help(FILE *out)
{
	static const char *const types[] = { "STRING", "N", "DURATION", "SIZE", "BOOL", "LIST" };
	char flag[80];

	fprintf(out, "Settings (in the config file as name = value, or as --flags):\n");
	for (size_t i = 0; i < NSETTINGS; i++) {
		size_t k;

		for (k = 0; settings[i].name[k] && k < sizeof(flag) - 1; k++)
			flag[k] = settings[i].name[k] == '_' ? '-' : settings[i].name[k];
		flag[k] = '\0';
		fprintf(out, "  --%-22s %-8s %s", flag, types[settings[i].type], settings[i].help);
		if (settings[i].def)
			fprintf(out, " [%s]", settings[i].def);
		if (settings[i].env)
			fprintf(out, " (env %s)", settings[i].env);
		fprintf(out, "\n");
	}
}

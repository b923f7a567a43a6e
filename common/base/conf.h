/*
 * conf - decod's settings: one table of every known setting (name, default,
 * type, help, environment variable), read from /etc/decod/decod.conf
 * ("name = value" lines), then the environment, then --flags, in that order
 * of precedence.  Every program (supervisor, stages, decoctl) reads the same
 * file, so an unknown name anywhere is an error with its line number.
 */
#ifndef DECOD_CONF_H
#define DECOD_CONF_H

#include <stdint.h>
#include <stdio.h>

enum conf_type { CONF_STR, CONF_INT, CONF_DURATION, CONF_SIZE, CONF_BOOL, CONF_LIST };

struct conf_setting {
	const char *name;	/* snake_case; the flag is --name-with-dashes */
	enum conf_type type;
	const char *def;	/* default, or NULL; "${state_dir}/x" expands */
	const char *env;	/* extra environment name (besides DECOD_NAME), or NULL */
	long long min, max;	/* bounds for INT (and SIZE/DURATION in ms) when max > min */
	const char *help;
	/*
	 * readers: who reads it, space separated: stage names, "decod" (the
	 * supervisor), "*" (every stage).  The supervisor restarts a stage
	 * when a setting it reads changes on reload, or sends it SIGHUP when
	 * every changed setting it reads is CONF_LIVE.  decoctl reads anything.
	 */
	const char *readers;
	unsigned flags;		/* CONF_LIVE | CONF_FILE | CONF_LISTEN */
};

#define CONF_LIVE 1u	/* readers apply a change on SIGHUP */
#define CONF_FILE 2u	/* names a file its readers read: --check-config opens it */
#define CONF_LISTEN 4u	/* a port, HOST:PORT or tcp:// URL listened on: must be free */

struct conf;

/* conf_new - a configuration holding only defaults; conf_free frees it */
struct conf *conf_new(void);
void conf_free(struct conf *cf);

/* the table itself, in conf_table.c: conf_table_len entries, then a NULL name */
extern const struct conf_setting conf_table[];
extern const size_t conf_table_len;

/* conf_settings - the table (NULL-name terminated) for --help and docs */
const struct conf_setting *conf_settings(void);

/*
 * conf_load_file - read "name = value" lines; '#' starts a comment; values
 * may be quoted with " or '.  Every bad line is reported on errs (when
 * non-NULL) as "FILE:LINE: message"; returns the number of bad lines, or -1
 * if the file cannot be read (a missing file is an error only if required).
 */
int conf_load_file(struct conf *cf, const char *path, int required, FILE *errs);

/* conf_load_env - apply DECOD_<NAME> and each setting's extra env name */
int conf_load_env(struct conf *cf, FILE *errs);

/*
 * conf_set - set name to value after checking its type and bounds.
 * Returns 0, or -1 with a message in err naming the setting.
 */
int conf_set(struct conf *cf, const char *name, const char *value, char *err, size_t errlen);

/* conf_get - the value (expanded), or "" when unset with no default */
const char *conf_get(const struct conf *cf, const char *name);
/*
 * conf_get_for - the value as program `who` reads it, whoever reads cf:
 * how the supervisor checks its stages' settings before starting them.
 * `who` must be among the setting's readers (else a bug: fatal).
 */
const char *conf_get_for(const struct conf *cf, const char *name, const char *who);
int64_t conf_get_int(const struct conf *cf, const char *name);
int64_t conf_get_ms(const struct conf *cf, const char *name);	/* DURATION */
uint64_t conf_get_size(const struct conf *cf, const char *name);	/* SIZE */
int conf_get_bool(const struct conf *cf, const char *name);

/*
 * conf_reads - whether program `who` ("renderer", "decod") reads setting s
 * by the table's readers field.
 */
int conf_reads(const struct conf_setting *s, const char *who);

/*
 * conf_set_reader - name the program reading cf; from then on conf_get of
 * a setting not marked for it logs an error, and aborts when the
 * environment has DECOD_CONF_STRICT=1 (the test suite sets it), so a read
 * the table does not declare cannot go unseen.  NULL: no check (decoctl).
 */
void conf_set_reader(struct conf *cf, const char *who);

/*
 * conf_stage_digest - the settings `who` reads, with their values, as one
 * string; live selects the CONF_LIVE ones (1) or the others (0).  Two
 * digests differ exactly when such a setting changed.  Caller frees.
 */
char *conf_stage_digest(const struct conf *cf, const char *who, int live);

/* conf_path - the file it was read from ("" if none) */
const char *conf_path(const struct conf *cf);

/*
 * conf_from_args - the common start of every program: finds -c FILE,
 * --config FILE or DECOD_CONFIG (else /etc/decod/decod.conf, optional), loads
 * it, the environment, then every --name=value / --name value flag in argv.
 * Flags it does not know are left in argv (compacted, argc updated) for the
 * program.  On error prints to stderr and returns NULL.
 */
struct conf *conf_from_args(int *argc, char **argv);

/* conf_print_help - the settings table as --flag lines */
void conf_print_help(FILE *out);

#endif

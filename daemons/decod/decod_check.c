/*
 * decod_check - the configuration errors start-up would otherwise meet
 * one stage at a time, as deaths and restarts with a growing delay: a store
 * URL no backend reads, a stage without a program, a libexec_dir that is
 * not there, a file a setting names (CONF_FILE) that cannot be read, a port
 * a setting listens on (CONF_LISTEN) that is taken.  `decod --check-config`
 * prints them; decod itself refuses to start with them (and a reload with
 * them keeps the running config).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/metrics.h"
#include "common/stage_health.h"
#include "common/store.h"
#include "common/util.h"
#include "daemons/decod/decod.h"

/* stage_name_ok - a stage name is a program name: [a-z0-9_-], not too long */
static int
stage_name_ok(const char *n)
{
	size_t len = strlen(n);

	if (len == 0 || len >= sizeof(((struct child *)0)->name))
		return 0;
	for (const char *p = n; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' ||
		    *p == '-'))
			return 0;
	return 1;
}

/* check_stages - every stage named once, each a program decod can run */
static int
check_stages(const struct conf *cf, FILE *errs)
{
	const char *dir = conf_get(cf, "libexec_dir");
	char *list = xstrdup(conf_get(cf, "stages")), *save = NULL, path[4096];
	const char **seen = NULL;
	struct stat sb;
	size_t n = 0;
	int bad = 0, dir_ok;

	if (stat(dir, &sb) < 0) {
		fprintf(errs, "libexec_dir: %s: %s\n", dir, strerror(errno));
		bad++;
	} else if (!S_ISDIR(sb.st_mode)) {
		fprintf(errs, "libexec_dir: %s is not a folder\n", dir);
		bad++;
	}
	dir_ok = bad == 0;
	for (char *s = strtok_r(list, " ,", &save); s; s = strtok_r(NULL, " ,", &save)) {
		int twice = 0;

		for (size_t i = 0; i < n; i++)
			twice |= strcmp(seen[i], s) == 0;
		seen = xrealloc(seen, (n + 1) * sizeof(*seen));
		seen[n++] = s;
		if (twice) {
			fprintf(errs, "stages: %s is named twice\n", s);
			bad++;
		} else if (!stage_name_ok(s)) {
			fprintf(errs, "stages: \"%s\" is not a stage name ([a-z0-9_-])\n", s);
			bad++;
		} else if (dir_ok) {
			snprintf(path, sizeof(path), "%s/%s", dir, s);
			if (stat(path, &sb) < 0) {
				fprintf(errs, "stages: %s: no program %s (%s)\n", s, path,
				    strerror(errno));
				bad++;
			} else if (!S_ISREG(sb.st_mode) || access(path, X_OK) < 0) {
				fprintf(errs, "stages: %s: %s is not an executable file\n", s, path);
				bad++;
			}
		}
	}
	if (n == 0) {
		fprintf(errs, "stages: names no stage\n");
		bad++;
	}
	free(seen);
	free(list);
	return bad;
}

/*
 * reader_of - who reads cf's setting s: "decod" or the first of its stages
 * that does, into who; 0 when nothing that runs reads it
 */
static int
reader_of(const struct conf *cf, const struct conf_setting *s, char *who, size_t wholen)
{
	const char *p = conf_get(cf, "stages");

	if (conf_reads(s, "decod")) {
		snprintf(who, wholen, "decod");
		return 1;
	}
	while (*p != '\0') {
		size_t len = strcspn(p, " ,");

		if (len > 0 && len < wholen) {
			snprintf(who, wholen, "%.*s", (int)len, p);
			if (conf_reads(s, who))
				return 1;
		}
		p += len;
		p += strspn(p, " ,");
	}
	return 0;
}

/* check_file - the file setting s names opens for reading */
static int
check_file(const struct conf_setting *s, const char *path, FILE *errs)
{
	struct stat sb;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(errs, "%s: %s: %s\n", s->name, path, strerror(errno));
		return 1;
	}
	if (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		fprintf(errs, "%s: %s is a folder, not a file\n", s->name, path);
		close(fd);
		return 1;
	}
	close(fd);
	return 0;
}

/*
 * running_here - whether a stage of a decod using this runtime_dir is alive
 * (its heartbeat file fresh): then a taken port is presumably its own
 */
static int
running_here(const struct conf *cf)
{
	const char *dir = conf_get(cf, "runtime_dir");
	struct dirent *de;
	int alive = 0;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return 0;
	while (!alive && (de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		char path[4096];
		struct stat sb;

		if (len < 7 || strcmp(de->d_name + len - 6, ".alive") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		alive = stat(path, &sb) == 0 && time(NULL) - sb.st_mtime <= STAGE_HEALTH_MAX_AGE_S;
	}
	closedir(d);
	return alive;
}

/*
 * check_listen - the address setting s names can be bound: a port (any
 * address), HOST:PORT or an nng tcp:// URL; ipc:// and port 0 need no check
 */
static int
check_listen(const struct conf *cf, const struct conf_setting *s, const char *v, FILE *errs)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	char hp[300];
	const char *sep;
	int fd, one = 1, rv, e;

	if (s->type == CONF_INT) {
		if (strcmp(v, "0") == 0)
			return 0;
		snprintf(hp, sizeof(hp), ":%s", v);
	} else if ((sep = strstr(v, "://")) != NULL) {
		if (strncmp(v, "tcp", 3) != 0)
			return 0;
		snprintf(hp, sizeof(hp), "%s", sep + 3);
	} else {
		snprintf(hp, sizeof(hp), "%s", v);
	}
	if (listen_addr_parse(hp, &ss, &sl) < 0) {
		fprintf(errs, "%s: \"%s\" is not HOST:PORT\n", s->name, v);
		return 1;
	}
	if ((ss.ss_family == AF_INET && ((struct sockaddr_in *)&ss)->sin_port == 0) ||
	    (ss.ss_family == AF_INET6 && ((struct sockaddr_in6 *)&ss)->sin6_port == 0))
		return 0;
	if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		fprintf(errs, "%s: %s: %s\n", s->name, v, strerror(errno));
		return 1;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	rv = bind(fd, (struct sockaddr *)&ss, sl);
	e = errno;
	if (rv < 0 && e == EADDRINUSE && running_here(cf)) {
		fprintf(errs, "%s: %s is in use, by this decod's own running stages "
		    "presumably (%s has live stages); not an error\n", s->name, v,
		    conf_get(cf, "runtime_dir"));
		rv = 0;
	} else if (rv < 0) {
		fprintf(errs, "%s: cannot listen on %s: %s\n", s->name, v, strerror(e));
	}
	close(fd);
	return rv < 0;
}

/* check_settings - files the settings in use name, and ports they listen on */
static int
check_settings(const struct conf *cf, FILE *errs)
{
	int bad = 0;

	for (const struct conf_setting *s = conf_settings(); s->name != NULL; s++) {
		char who[64];
		const char *v;

		if ((s->flags & (CONF_FILE | CONF_LISTEN)) == 0 ||
		    !reader_of(cf, s, who, sizeof(who)))
			continue;
		v = conf_get_for(cf, s->name, who);
		if (v == NULL || *v == '\0')
			continue;
		if (s->flags & CONF_FILE)
			bad += check_file(s, v, errs);
		else
			bad += check_listen(cf, s, v, errs);
	}
	return bad;
}

/* stage_runs - whether stages names st */
static int
stage_runs(const struct conf *cf, const char *st)
{
	char *list = xstrdup(conf_get(cf, "stages")), *save = NULL;
	int found = 0;

	for (char *s = strtok_r(list, " ,", &save); s && !found; s = strtok_r(NULL, " ,", &save))
		found = strcmp(s, st) == 0;
	free(list);
	return found;
}

/*
 * check_metrics - the metrics ports the stages will take after
 * metrics_listen's own (checked as a CONF_LISTEN setting) are free, and
 * metrics_port is not set where no acl stage runs to serve it
 */
static int
check_metrics(const struct conf *cf, FILE *errs)
{
	char *list = xstrdup(conf_get(cf, "stages")), *save = NULL, addr[300], name[96];
	int bad = 0, acl = 0;

	for (char *st = strtok_r(list, " ,", &save); st; st = strtok_r(NULL, " ,", &save)) {
		struct conf_setting s = { .name = name, .type = CONF_STR };
		const char *setting;

		acl |= strcmp(st, "acl") == 0;
		if (!stage_name_ok(st))
			continue;
		if ((setting = metrics_addr(cf, st, addr, sizeof(addr))) == NULL) {
			fprintf(errs, "%s\n", addr);
			free(list);
			return 1;
		}
		if (addr[0] == '\0' || strcmp(setting, "metrics_listen") != 0)
			continue;
		snprintf(name, sizeof(name), "metrics_listen (the %s's port)", st);
		bad += check_listen(cf, &s, addr, errs);
	}
	free(list);
	/* a stage's own metrics address where that stage does not run serves nothing */
	for (const struct conf_setting *s = conf_settings(); s->name != NULL; s++) {
		const char *st = s->name + strlen("metrics_listen_");

		if (strncmp(s->name, "metrics_listen_", strlen("metrics_listen_")) != 0 ||
		    *conf_get_for(cf, s->name, st) == '\0' || stage_runs(cf, st))
			continue;
		fprintf(errs, "%s: only the %s stage serves it and stages does not name %s\n",
		    s->name, st, st);
		bad++;
	}
	if (!acl && conf_get_int(cf, "metrics_port") != 0) {
		fprintf(errs, "metrics_port: only the acl stage serves it and stages does not "
		    "name acl; metrics_listen gives the supervisor and every stage an address\n");
		bad++;
	}
	return bad;
}

int
decod_check(const struct conf *cf, FILE *errs)
{
	char err[512];
	int bad = 0;

	if (store_url_check(conf_get(cf, "store"), err, sizeof(err)) < 0) {
		fprintf(errs, "%s\n", err);
		bad++;
	}
	return bad + check_stages(cf, errs) + check_settings(cf, errs) + check_metrics(cf, errs);
}

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

static const struct conf_setting settings[] = {
	/* where things live */
	{ "state_dir", CONF_STR, DECOD_LOCALSTATEDIR "/lib/decod", NULL, 0, 0,
	  "journal, spool, local store and git caches",
	  "* decod", 0 },
	{ "runtime_dir", CONF_STR, DECOD_RUNSTATEDIR "/decod", NULL, 0, 0,
	  "sockets: stage pipelines and the control socket",
	  "* decod", 0 },
	{ "libexec_dir", CONF_STR, DECOD_LIBEXECDIR, NULL, 0, 0,
	  "where the stage programs are",
	  "decod", 0 },
	{ "stages", CONF_LIST, "fetcher renderer publisher notifier", NULL, 0, 0,
	  "stages the supervisor runs, in pipeline order (webhook too where the API server "
	  "reaches it)",
	  "decod", 0 },
	{ "log_level", CONF_STR, "info", "LOG_LEVEL", 0, 0, "debug, info, warn or error",
	  "* decod", CONF_LIVE },
	{ "log_format", CONF_STR, "kv", "LOG_FORMAT", 0, 0, "kv or json",
	  "* decod", CONF_LIVE },
	{ "metrics_port", CONF_INT, "0", "METRICS_PORT", 0, 65535,
	  "Prometheus metrics port (0: off)",
	  "*", CONF_LISTEN },
	{ "json_max_depth", CONF_INT, "512", NULL, 16, 100000,
	  "deepest nesting of objects and arrays accepted in any JSON or YAML input "
	  "(blocks, resources, store values); a rendered decofile counts one more",
	  "* decod", 0 },
	/* supervisor */
	{ "stop_timeout", CONF_DURATION, "8s", NULL, 100, 600000,
	  "how long a stage may drain on stop before SIGKILL",
	  "* decod", 0 },
	{ "ready_timeout", CONF_DURATION, "30s", NULL, 100, 600000,
	  "how long a starting stage may take to report ready",
	  "decod", 0 },
	{ "restart_min", CONF_DURATION, "1s", NULL, 10, 600000,
	  "first restart delay of a dead stage (doubles)",
	  "decod", 0 },
	{ "restart_max", CONF_DURATION, "60s", NULL, 10, 3600000,
	  "longest restart delay",
	  "decod", 0 },
	{ "stable_after", CONF_DURATION, "60s", NULL, 10, 3600000,
	  "a stage up this long has its restart delay reset",
	  "decod", 0 },
	/* pipeline */
	{ "rescan_interval", CONF_DURATION, "2s", NULL, 10, 3600000,
	  "how often a stage rescans the journal for items it was not rung for",
	  "*", 0 },
	{ "retry_max", CONF_DURATION, "5m", NULL, 10, 86400000,
	  "longest delay between retries of a failed item",
	  "*", 0 },
	{ "journal_retention", CONF_DURATION, "168h", NULL, 60000, 0,
	  "how long history stays in the journal",
	  "renderer", CONF_LIVE },
	{ "history_keep", CONF_INT, "10", NULL, 1, 1000,
	  "rendered versions of each decofile kept for decoctl rollback",
	  "renderer fetcher", CONF_LIVE },
	{ "housekeeping_interval", CONF_DURATION, "1h", NULL, 100, 86400000,
	  "how often the journal is pruned and unreferenced spool blobs removed",
	  "renderer", CONF_LIVE },
	{ "addr_fetcher", CONF_STR, NULL, NULL, 0, 0, "nng address the fetcher listens on",
	  "fetcher", CONF_LISTEN },
	{ "addr_renderer", CONF_STR, NULL, NULL, 0, 0, "nng address the renderer listens on",
	  "fetcher renderer", CONF_LISTEN },
	{ "addr_publisher", CONF_STR, NULL, NULL, 0, 0, "nng address the publisher listens on",
	  "renderer publisher fetcher", CONF_LISTEN },
	{ "addr_notifier", CONF_STR, NULL, NULL, 0, 0, "nng address the notifier listens on",
	  "publisher notifier", CONF_LISTEN },
	/* store */
	{ "store", CONF_STR, "local:${state_dir}/store", "DECOD_STORE", 0, 0,
	  "local:PATH or etcd:URL[,URL...]",
	  "* decod", 0 },
	{ "store_prefix", CONF_STR, "/decod", NULL, 0, 0, "key prefix in the store",
	  "*", 0 },
	{ "etcd_timeout", CONF_DURATION, "10s", NULL, 100, 600000, "deadline of every etcd call",
	  "*", 0 },
	{ "etcd_cacert", CONF_STR, NULL, NULL, 0, 0, "CA file for etcd TLS",
	  "*", CONF_FILE },
	{ "etcd_cert", CONF_STR, NULL, NULL, 0, 0, "client certificate for etcd mTLS",
	  "*", CONF_FILE },
	{ "etcd_key", CONF_STR, NULL, NULL, 0, 0, "client key for etcd mTLS",
	  "*", CONF_FILE },
	{ "session_ttl", CONF_DURATION, "10s", NULL, 1000, 3600000,
	  "job lock lease: how soon other instances take over a dead one's work",
	  "*", 0 },
	{ "instance_id", CONF_STR, NULL, NULL, 0, 0, "this instance's name (default host:pid)",
	  "*", 0 },
	/* fetcher */
	{ "poll_period", CONF_DURATION, "15s", NULL, 100, 86400000,
	  "default poll period of a source",
	  "fetcher", 0 },
	{ "fetch_timeout", CONF_DURATION, "60s", NULL, 100, 3600000,
	  "deadline of one fetch (git ls-remote, fetch)",
	  "fetcher", 0 },
	{ "secrets_dir", CONF_STR, "${state_dir}/secrets", NULL, 0, 0,
	  "where credential files named by spec.*.secret are",
	  "fetcher", 0 },
	{ "max_tree_size", CONF_SIZE, "256MB", NULL, 0, 0, "largest source tree fetched",
	  "fetcher", 0 },
	/* sources */
	{ "fetch_concurrency", CONF_INT, "8", NULL, 1, 256,
	  "fetches run at once (a hung remote holds one, for at most fetch_timeout)",
	  "fetcher", 0 },
	{ "github_api_url", CONF_STR, "https://api.github.com", "GITHUB_API_URL", 0, 0,
	  "GitHub API base URL (GitHub Enterprise: https://HOST/api/v3)",
	  "fetcher", 0 },
	{ "github_token_file", CONF_STR, NULL, NULL, 0, 0,
	  "file holding the GitHub token for sources that name no secret "
	  "(else the environment's GITHUB_TOKEN)",
	  "fetcher", CONF_FILE },
	{ "oci_insecure_registries", CONF_LIST, "", NULL, 0, 0,
	  "registries (host[:port]) reached over plain HTTP",
	  "fetcher", 0 },
	{ "max_archive_entries", CONF_INT, "10000", NULL, 1, 10000000,
	  "most entries a zipball or layer may hold",
	  "fetcher", 0 },
	{ "max_archive_ratio", CONF_INT, "100", NULL, 1, 1000000,
	  "highest compression ratio of an archive (zip bombs), past its first MiB",
	  "fetcher", 0 },
	/* renderer */
	{ "compress_threshold", CONF_SIZE, "2.5MB", "DECOFILE_COMPRESS_THRESHOLD", 0, 0,
	  "documents above this size are published brotli-compressed",
	  "renderer", 0 },
	{ "brotli_quality", CONF_INT, "8", NULL, 0, 11,
	  "brotli quality (0-11): 8 renders 4 MB in about 0.1 s; 11 is smallest but ~40x slower",
	  "renderer", 0 },
	{ "brotli_window", CONF_INT, "24", NULL, 10, 24, "brotli window bits (10-24)",
	  "renderer", 0 },
	/* publisher */
	{ "default_target", CONF_STR, "file", NULL, 0, 0, "target of a Decofile that names none",
	  "renderer publisher webhook", 0 },
	{ "file_root", CONF_STR, "${state_dir}/published", NULL, 0, 0,
	  "root folder of the file target",
	  "publisher", 0 },
	{ "drift_check_interval", CONF_DURATION, "10s", NULL, 100, 86400000,
	  "how often published objects are re-checked",
	  "publisher", 0 },
	/* s3 */
	{ "s3_bucket", CONF_STR, "", "DECOFILE_S3_BUCKET", 0, 0,
	  "bucket of the s3 target (unset: s3 Decofiles get Ready=False)",
	  "publisher webhook", 0 },
	{ "s3_region", CONF_STR, "us-east-1", "DECOFILE_S3_REGION", 0, 0,
	  "region the s3 target signs for",
	  "publisher webhook", 0 },
	{ "s3_public_host", CONF_STR, "", "DECOFILE_S3_PUBLIC_HOST", 0, 0,
	  "host that serves the s3 target's objects over https: status.s3URL, and the"
	  " webhook's DECO_RELEASE of s3 sites (the webhook needs it set; the publisher"
	  " defaults to <bucket>.s3.<region>.amazonaws.com)",
	  "publisher webhook", 0 },
	{ "s3_prefix", CONF_STR, "", "DECOFILE_S3_PREFIX", 0, 0,
	  "key prefix: [<prefix>/]<namespace>/<deploymentId>/decofile.json",
	  "publisher webhook", 0 },
	{ "s3_endpoint", CONF_STR, "", "AWS_ENDPOINT_URL", 0, 0,
	  "S3-compatible endpoint URL, addressed path-style (unset: AWS, virtual-host)",
	  "publisher", 0 },
	{ "s3_credentials_file", CONF_STR, "", "AWS_SHARED_CREDENTIALS_FILE", 0, 0,
	  "credentials file read when AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are unset"
	  " (default ~/.aws/credentials; re-read when it changes)",
	  "publisher", CONF_FILE },
	{ "s3_profile", CONF_STR, "default", "AWS_PROFILE", 0, 0,
	  "profile of the credentials file",
	  "publisher", 0 },
	{ "s3_check_interval", CONF_DURATION, "60s", NULL, 100, 86400000,
	  "how often each S3 object is checked for drift (HEAD, ETag)",
	  "publisher", 0 },
	{ "s3_concurrency", CONF_INT, "32", NULL, 1, 1024,
	  "S3 requests in flight at once",
	  "publisher", 0 },
	{ "s3_timeout", CONF_DURATION, "30s", NULL, 100, 600000,
	  "deadline of one S3 request",
	  "publisher", 0 },
	{ "s3_gc", CONF_BOOL, "false", "DECOFILE_S3_GC", 0, 0,
	  "delete the object of a deleted Decofile (unless annotated deco.sites/deletion: detach)",
	  "publisher", 0 },
	/* notifier */
	{ "notify_concurrency", CONF_INT, "30", NULL, 1, 100000, "replicas called at once",
	  "notifier", 0 },
	{ "notify_timeout", CONF_DURATION, "30s", NULL, 10, 3600000, "push: per attempt",
	  "notifier", 0 },
	{ "notify_attempts", CONF_INT, "3", NULL, 1, 100, "push: attempts per replica",
	  "notifier", 0 },
	{ "notify_poll_timeout", CONF_DURATION, "150s", NULL, 10, 3600000, "poll: per replica",
	  "notifier", 0 },
	{ "notify_deadline", CONF_DURATION, "300s", NULL, 10, 86400000, "whole rollout",
	  "notifier", 0 },
	{ "reload_token_file", CONF_STR, NULL, NULL, 0, 0,
	  "file holding the reload token for replicas that register none",
	  "notifier", CONF_FILE },
	/* Kubernetes (common/kube.c) */
	{ "kubeconfig", CONF_STR, NULL, "KUBECONFIG", 0, 0,
	  "kubeconfig file of the cluster to work with (unset: in-cluster when in a pod, else none)",
	  "fetcher publisher notifier acl webhook decod", CONF_FILE },
	{ "kube_context", CONF_STR, NULL, NULL, 0, 0,
	  "kubeconfig context to use (default: its current-context)",
	  "fetcher publisher notifier acl webhook decod", 0 },
	{ "kube_namespace", CONF_STR, NULL, "POD_NAMESPACE", 0, 0,
	  "decod's own namespace (its Lease); default: the pod's or the context's",
	  "fetcher publisher notifier acl webhook decod", 0 },
	{ "kube_sa_dir", CONF_STR, "/var/run/secrets/kubernetes.io/serviceaccount", NULL, 0, 0,
	  "in a pod: folder of the service-account token (re-read when it rotates), ca.crt and namespace",
	  "fetcher publisher notifier acl webhook decod", 0 },
	{ "kube_timeout", CONF_DURATION, "30s", NULL, 100, 600000,
	  "deadline of every Kubernetes API call, retries of 429 and 5xx included",
	  "fetcher publisher notifier acl webhook decod", 0 },
	/* leader election: the supervisor (daemons/decod/decod_lease.c), or the
	 * fetcher when it runs without one, as in deploy/'s pod (fetch_kube.c) */
	{ "leader_elect", CONF_BOOL, "true", NULL, 0, 0,
	  "with a cluster and the local store, run the stages only while holding the Lease",
	  "decod fetcher", 0 },
	{ "leader_lease_name", CONF_STR, "decod-leader", NULL, 0, 0,
	  "name of the coordination.k8s.io Lease in decod's namespace",
	  "decod fetcher", 0 },
	{ "leader_lease_duration", CONF_DURATION, "15s", NULL, 1000, 3600000,
	  "a holder that has not renewed for this long is replaced",
	  "decod fetcher", 0 },
	{ "leader_renew_deadline", CONF_DURATION, "10s", NULL, 500, 3600000,
	  "the holder stops its stages when it could not renew for this long",
	  "decod fetcher", 0 },
	{ "leader_retry_period", CONF_DURATION, "2s", NULL, 100, 600000,
	  "how often the lease is renewed or tried",
	  "decod fetcher", 0 },
	/* webhook */
	{ "webhook_listen", CONF_STR, "0.0.0.0:9443", NULL, 0, 0,
	  "HOST:PORT the admission webhook serves HTTPS on (port 0: any free port)",
	  "webhook", CONF_LISTEN },
	{ "webhook_cert_file", CONF_STR, NULL, NULL, 0, 0,
	  "webhook TLS certificate chain (PEM, e.g. cert-manager's tls.crt); re-read when it changes",
	  "webhook", CONF_FILE },
	{ "webhook_key_file", CONF_STR, NULL, NULL, 0, 0,
	  "webhook TLS private key (PEM, e.g. cert-manager's tls.key); re-read when it changes",
	  "webhook", CONF_FILE },
	{ "webhook_max_connections", CONF_INT, "512", NULL, 1, 960,
	  "connections the webhook holds at once; more wait in the listen queue",
	  "webhook", 0 },
	{ "webhook_max_request", CONF_SIZE, "3MiB", NULL, 0, 0,
	  "largest AdmissionReview body the webhook reads (larger: HTTP 413)",
	  "webhook", CONF_LIVE },
	{ "webhook_request_timeout", CONF_DURATION, "10s", NULL, 100, 600000,
	  "a request must arrive whole within this time, or its connection is closed",
	  "webhook", CONF_LIVE },
	{ "webhook_idle_timeout", CONF_DURATION, "120s", NULL, 1000, 3600000,
	  "an idle keep-alive connection is closed after this (keep it above the API server's 90 s)",
	  "webhook", CONF_LIVE },
	{ "webhook_managers", CONF_LIST,
	  "system:serviceaccount:decod-system:decod "
	  "system:serviceaccount:kube-system:generic-garbage-collector "
	  "system:serviceaccount:kube-system:namespace-controller", NULL, 0, 0,
	  "users allowed to change objects labelled app.kubernetes.io/managed-by: decod "
	  "(drift prevention; empty: off)",
	  "webhook", CONF_LIVE },
	/* acl */
	{ "valkey_sentinel_urls", CONF_LIST, NULL, "VALKEY_SENTINEL_URLS", 0, 0,
	  "Sentinels to ask for the Valkey master and replicas (host:port or "
	  "redis://[:password@]host:port, comma or space separated)",
	  "acl", 0 },
	{ "valkey_sentinel_master_name", CONF_STR, "mymaster", "VALKEY_SENTINEL_MASTER_NAME", 0, 0,
	  "the master's name in Sentinel",
	  "acl", 0 },
	{ "valkey_admin_password", CONF_STR, NULL, "VALKEY_ADMIN_PASSWORD", 0, 0,
	  "password of the Valkey admin (default) user on every node (prefer the _file form)",
	  "acl", 0 },
	{ "valkey_admin_password_file", CONF_STR, NULL, NULL, 0, 0,
	  "file holding the Valkey admin password (first line)",
	  "acl", CONF_FILE },
	{ "valkey_url", CONF_STR, NULL, "VALKEY_URL", 0, 0,
	  "one Valkey node, no Sentinel (redis://[:password@]host:port; development)",
	  "acl", 0 },
	{ "valkey_acl_resync_period", CONF_DURATION, "10m", "VALKEY_ACL_RESYNC_PERIOD", 1000,
	  604800000, "how often every tenant's ACL user is re-checked on every node",
	  "acl", 0 },
	{ "valkey_timeout", CONF_DURATION, "5s", NULL, 100, 600000,
	  "deadline of one round of Valkey or Sentinel calls to one node",
	  "acl", 0 },
	{ NULL, CONF_STR, NULL, NULL, 0, 0, NULL, NULL, 0 },
};

#define NSETTINGS (sizeof(settings) / sizeof(settings[0]) - 1)

static const char *value_of(const struct conf *cf, int i);

struct conf {
	char *reader;			/* conf_set_reader, or NULL */
	char *val[NSETTINGS];		/* set values; NULL: default */
	char *expanded[NSETTINGS];	/* cache of conf_get results */
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
	return xcalloc(1, sizeof(struct conf));
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

/*
 * acl_store - the acl stage's tenant source off Kubernetes: Tenant
 * resources in the store (watched, then listed, so nothing put in between
 * is missed), conditions written to
 * the stage's own status fragment, and credentials kept in env files under
 * <state_dir>/acl.  Env files no Tenant claims at start-up are orphans:
 * their users are deleted on every node.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>

#include "common/journal.h"
#include "common/json.h"
#include "common/log.h"
#include "common/resource.h"
#include "common/stage.h"
#include "common/stage_watch.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/acl/acl.h"
#include "daemons/acl/acl_cmd.h"
#include "daemons/acl/acl_cred.h"

#define FLUSH_BATCH 64	/* fragments per store_put_many, per loop turn */
#define NS_MAX 254	/* a namespace, as key_parse_resource gives it */

/* the stage's status fragment of one tenant, as written and as waiting */
struct frag {
	char *key;		/* key_status(...) */
	char *text;		/* last written (or read), NULL if none */
	char *pend;		/* newer, waiting for flush, or NULL */
	struct frag *next;
};

struct src {
	struct acl *a;
	struct stage *st;
	struct store_watch *watch;
	struct stage_watch *sw;
	char *tenant_prefix;
	struct frag *frags;
	int frags_listed;	/* every fragment there was is in frags */
	size_t npend;
	int64_t flush_timer;
};

static void flush_cb(struct stage *st, void *arg);
static void src_report(void *state, const char *ns, const char *name, const char *user,
    const char *status, const char *reason, const char *message);

/* frag_drop - forget ns/name's fragment (the tenant is gone), written or not */
static void
frag_drop(struct src *s, const char *ns, const char *name)
{
	char *key = key_status("tenants", ns, name, "acl");

	for (struct frag **pp = &s->frags; *pp != NULL; pp = &(*pp)->next) {
		struct frag *f = *pp;

		if (strcmp(f->key, key) == 0) {
			*pp = f->next;
			if (f->pend != NULL)
				s->npend--;
			free(f->key);
			free(f->text);
			free(f->pend);
			free(f);
			break;
		}
	}
	free(key);
}

static void
src_flush(void *state)
{
	struct src *s = state;

	if (s->npend > 0 && s->flush_timer == 0)
		s->flush_timer = stage_add_timer(s->st, 0, flush_cb, s);
}

/*
 * spec.site as written, every byte: yajl's tree keeps a string only up to
 * its first NUL ("a\u0000b" would read "a"), so the site is taken from
 * yajl's event parser, which hands over the decoded length.
 */
struct site_scan {
	int depth;		/* containers open */
	int spec_key;		/* the last key at the top was "spec" */
	int in_spec;		/* inside the top-level spec object */
	int site_key;		/* the last key in spec was "site" */
	struct buf site;
	int found;
};

static int
ss_open(void *ctx)
{
	struct site_scan *ss = ctx;

	if (ss->depth == 1 && ss->spec_key)
		ss->in_spec = 1;
	ss->spec_key = ss->site_key = 0;
	ss->depth++;
	return 1;
}

static int
ss_open_arr(void *ctx)
{
	struct site_scan *ss = ctx;

	ss->spec_key = ss->site_key = 0;	/* "spec": [...] is no spec object */
	ss->depth++;
	return 1;
}

static int
ss_close(void *ctx)
{
	struct site_scan *ss = ctx;

	if (--ss->depth == 1)
		ss->in_spec = 0;
	return 1;
}

static int
ss_key(void *ctx, const unsigned char *k, size_t n)
{
	struct site_scan *ss = ctx;

	if (ss->depth == 1)
		ss->spec_key = n == 4 && memcmp(k, "spec", 4) == 0;
	else if (ss->depth == 2 && ss->in_spec)
		ss->site_key = n == 4 && memcmp(k, "site", 4) == 0;
	return 1;
}

static int
ss_string(void *ctx, const unsigned char *s, size_t n)
{
	struct site_scan *ss = ctx;

	if (ss->depth == 2 && ss->in_spec && ss->site_key) {
		buf_reset(&ss->site);
		buf_add(&ss->site, s, n);
		ss->found = 1;
	}
	ss->site_key = 0;
	return 1;
}

static int
ss_scalar(void *ctx)
{
	struct site_scan *ss = ctx;

	ss->site_key = 0;
	return 1;
}

static int ss_null(void *ctx) { return ss_scalar(ctx); }
static int ss_bool(void *ctx, int b) { (void)b; return ss_scalar(ctx); }
static int
ss_number(void *ctx, const char *n, size_t len)
{
	(void)n;
	(void)len;
	return ss_scalar(ctx);
}

/*
 * site_of - spec.site of a Tenant document (already parsed once: valid
 * JSON, no duplicate key) into site, NULs and all; 1 found, 0 not there,
 * -1 the event parser refused what the tree took
 */
static int
site_of(const char *text, size_t len, struct buf *site)
{
	static const yajl_callbacks cb = { ss_null, ss_bool, NULL, NULL, ss_number,
		ss_string, ss_open, ss_key, ss_close, ss_open_arr, ss_close };
	struct site_scan ss;
	yajl_handle h;
	int ok;

	memset(&ss, 0, sizeof(ss));
	buf_init(&ss.site);
	if ((h = yajl_alloc(&cb, NULL, &ss)) == NULL)
		abort();
	(void)yajl_config(h, yajl_allow_comments, 1);	/* as yajl_tree_parse */
	ok = yajl_parse(h, (const unsigned char *)text, len) == yajl_status_ok &&
	    yajl_complete_parse(h) == yajl_status_ok;
	yajl_free(h);
	buf_reset(site);
	if (ok && ss.found)
		buf_add(site, ss.site.data, ss.site.len);
	buf_free(&ss.site);
	return !ok ? -1 : ss.found;
}

/*
 * tenant_from - what a Tenant document asks for: its user (into user,
 * every byte of spec.site, else the namespace without "sites-"; never
 * NULL), since (out), and whether it is enabled
 */
static int
tenant_from(const char *ns, const char *text, size_t len, struct buf *user, char *since,
    size_t sincelen)
{
	const char *created;

	struct json_error je;
	yajl_val doc = json_parse(text, len, &je);
	int enabled, found;

	snprintf(since, sincelen, "%s", "");
	buf_reset(user);
	buf_add(user, "", 0);	/* user->data is a string, even when empty */
	if (doc == NULL)
		return 0;
	if ((created = json_get_str(doc, "metadata", "created_at", NULL)) != NULL)
		snprintf(since, sincelen, "%s", created);
	/* a Tenant exists to ask for a user: valkeyAcl defaults to true */
	enabled = json_get_bool(doc, 1, "spec", "valkeyAcl", NULL);
	yajl_tree_free(doc);
	/* unreadable: an empty user, refused (InvalidName), never another one */
	if ((found = site_of(text, len, user)) == 0 || (found > 0 && user->len == 0)) {
		char u[NS_MAX];

		buf_reset(user);
		if (acl_user_for_namespace(ns, u, sizeof(u)) == 0)
			buf_adds(user, u);
	}
	return enabled;
}

static void
on_tenant(void *arg, const struct store_event *ev)
{
	struct src *s = arg;
	char kind[NS_MAX], ns[NS_MAX], name[NS_MAX], since[40];
	struct buf user;

	buf_init(&user);
	if (ev->type == STORE_EV_RELIST) {
		struct store_list l;

		if (store_list(stage_store(s->st), s->tenant_prefix, &l) < 0) {
			log_kv(LOG_WARN, "cannot re-list tenants", "error",
			    store_error(stage_store(s->st)), NULL);
			return;
		}
		acl_relist_begin(s->a);
		for (size_t i = 0; i < l.n; i++) {
			int enabled;

			if (key_parse_resource(l.kvs[i].key, kind, ns, name) < 0)
				continue;
			enabled = tenant_from(ns, l.kvs[i].value, l.kvs[i].vlen, &user, since,
			    sizeof(since));
			acl_tenant_put(s->a, ns, name, user.data, user.len, since, enabled, 1);
		}
		acl_relist_end(s->a);
		store_list_free(&l);
		buf_free(&user);
		return;
	}
	if (key_parse_resource(ev->key, kind, ns, name) < 0 || strcmp(kind, "tenants") != 0) {
		buf_free(&user);
		return;
	}
	if (ev->type == STORE_EV_DELETE) {
		acl_tenant_del(s->a, ns, name);
		/* its status goes with it (no write still waiting may bring it back) */
		frag_drop(s, ns, name);
		if (status_delete(stage_store(s->st), "tenants", ns, name) < 0)
			log_kv(LOG_WARN, "cannot remove a deleted tenant's status", "ns", ns,
			    "name", name, "error", store_error(stage_store(s->st)), NULL);
	} else {
		int enabled = tenant_from(ns, ev->value, ev->vlen, &user, since, sizeof(since));

		/* any change of the resource (the valkey-acl-sync annotation too) rechecks */
		acl_tenant_put(s->a, ns, name, user.data, user.len, since, enabled, 1);
		if (!enabled)
			src_report(s, ns, name, user.data, "False", "Disabled", "spec.valkeyAcl "
			    "is false: no ACL user (it is deleted on every node)");
	}
	buf_free(&user);
}

/* orphans - env files whose namespace no Tenant claims */
static void
orphans(struct src *s)
{
	const char *dir = acl_state_dir(s->a);
	DIR *d = opendir(dir);
	struct dirent *e;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		char ns[256], user[ACL_USER_MAX], pw[128];
		size_t n = strlen(e->d_name);

		if (n <= 4 || n - 4 >= sizeof(ns) || strcmp(e->d_name + n - 4, ".env") != 0)
			continue;
		snprintf(ns, sizeof(ns), "%.*s", (int)(n - 4), e->d_name);
		if (acl_env_read(dir, ns, user, sizeof(user), pw, sizeof(pw)) == 0)
			acl_orphan(s->a, ns, user);
		memset(pw, 0, sizeof(pw));
	}
	closedir(d);
}

static void *
src_start(struct acl *a, struct stage *st)
{
	struct src *s = xcalloc(1, sizeof(*s));

	s->a = a;
	s->st = st;
	s->tenant_prefix = key_resource_prefix("tenants", NULL);
	/* watch first, then list (src_load): nothing put in between is missed */
	if ((s->watch = store_watch_open(st, s->tenant_prefix, on_tenant, s, 1000,
	    &s->sw)) == NULL) {
		free(s->tenant_prefix);
		free(s);
		return NULL;
	}
	return s;
}

/*
 * frags_list - read the stage's fragments of every tenant in one list, so
 * the first round's conditions need no store read per tenant (a round trip
 * each on etcd).  On failure frag_of reads them one by one.
 */
static void
frags_list(struct src *s)
{
	char *prefix = key_status_kind_prefix("tenants");
	struct store_list l;
	size_t n;

	if (store_list(stage_store(s->st), prefix, &l) < 0) {
		free(prefix);
		return;
	}
	for (size_t i = 0; i < l.n; i++) {
		struct frag *f;

		n = strlen(l.kvs[i].key);
		if (n < 4 || strcmp(l.kvs[i].key + n - 4, "/acl") != 0)
			continue;
		f = xcalloc(1, sizeof(*f));
		f->key = xstrdup(l.kvs[i].key);
		f->text = xstrndup(l.kvs[i].value, l.kvs[i].vlen);
		f->next = s->frags;
		s->frags = f;
	}
	store_list_free(&l);
	free(prefix);
	s->frags_listed = 1;
}

static int
src_load(void *state)
{
	struct src *s = state;
	struct store_list l;
	char kind[NS_MAX], ns[NS_MAX], name[NS_MAX], since[40];
	struct buf user;

	frags_list(s);		/* first: the tenants below may report at once */
	if (store_list(stage_store(s->st), s->tenant_prefix, &l) < 0) {
		log_kv(LOG_ERROR, "cannot list tenants", "error", store_error(stage_store(s->st)),
		    NULL);
		return -1;
	}
	buf_init(&user);
	for (size_t i = 0; i < l.n; i++) {
		int enabled;

		if (key_parse_resource(l.kvs[i].key, kind, ns, name) < 0)
			continue;
		enabled = tenant_from(ns, l.kvs[i].value, l.kvs[i].vlen, &user, since,
		    sizeof(since));
		acl_tenant_put(s->a, ns, name, user.data, user.len, since, enabled, 0);
	}
	buf_free(&user);
	store_list_free(&l);
	orphans(s);
	return 0;
}

static void
src_stop(void *state)
{
	struct src *s = state;

	if (s->flush_timer > 0)
		stage_cancel_timer(s->st, s->flush_timer);
	while (s->npend > 0) {
		size_t before = s->npend;

		flush_cb(s->st, s);
		if (s->flush_timer > 0)
			stage_cancel_timer(s->st, s->flush_timer);
		s->flush_timer = 0;
		if (s->npend == before)
			break;	/* the store fails: the next start writes them again */
	}
	while (s->frags != NULL) {
		struct frag *f = s->frags;

		s->frags = f->next;
		free(f->key);
		free(f->text);
		free(f->pend);
		free(f);
	}
	store_watch_close(s->watch, s->sw);
	free(s->tenant_prefix);
	free(s);
}

/* frag_of - the cached fragment of ns/name, read from the store the first time */
static struct frag *
frag_of(struct src *s, const char *ns, const char *name)
{
	char *key = key_status("tenants", ns, name, "acl"), *val = NULL;
	struct frag *f;
	size_t len;

	for (f = s->frags; f != NULL; f = f->next) {
		if (strcmp(f->key, key) == 0) {
			free(key);
			return f;
		}
	}
	f = xcalloc(1, sizeof(*f));
	f->key = key;
	if (!s->frags_listed && store_get(stage_store(s->st), key, &val, &len) == 0)
		f->text = val;
	f->next = s->frags;
	s->frags = f;
	return f;
}

/*
 * src_report - the condition and the username in one fragment text, kept
 * back for flush: one store write per changed tenant, FLUSH_BATCH of them
 * per store_put_many, so a round that changes many never holds the loop
 * for long (the local store fsyncs every key).
 */
static void
src_report(void *state, const char *ns, const char *name, const char *user,
    const char *status, const char *reason, const char *message)
{
	struct src *s = state;
	struct frag *f = frag_of(s, ns, name);
	const char *base = f->pend != NULL ? f->pend : f->text;
	struct buf b;
	struct jw w;
	char *text;
	int changed = 0, moved = 0;

	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "username");
	jw_str(&w, user);
	jw_end_obj(&w);
	buf_addc(&b, '\0');
	text = status_fragment_build(base, base != NULL ? strlen(base) : 0, b.data,
	    "Provisioned", status, reason, message, &changed, &moved);
	buf_free(&b);
	if (text == NULL)
		return;
	if (moved && journal_record_condition(stage_journal(s->st), "tenants", ns, name,
	    "Provisioned", status, reason, message) < 0)
		log_kv(LOG_WARN, "journal: cannot record condition", "error",
		    journal_error(stage_journal(s->st)), NULL);
	if (!changed) {
		free(text);
		return;
	}
	if (f->pend == NULL)
		s->npend++;
	free(f->pend);
	f->pend = text;
	/* a zero-delay timer: every report of this loop turn goes in one batch */
	src_flush(s);
}

static void
flush_cb(struct stage *st, void *arg)
{
	struct src *s = arg;
	const char *keys[FLUSH_BATCH], *vals[FLUSH_BATCH];
	struct frag *fs[FLUSH_BATCH];
	size_t lens[FLUSH_BATCH], n = 0;

	s->flush_timer = 0;
	for (struct frag *f = s->frags; f != NULL && n < FLUSH_BATCH; f = f->next) {
		if (f->pend == NULL)
			continue;
		fs[n] = f;
		keys[n] = f->key;
		vals[n] = f->pend;
		lens[n] = strlen(f->pend);
		n++;
	}
	if (n == 0)
		return;
	if (store_put_many_volatile(stage_store(st), keys, vals, lens, n) < 0) {
		log_kv(LOG_WARN, "cannot write tenant conditions; retrying", "error",
		    store_error(stage_store(st)), NULL);
		s->flush_timer = stage_add_timer(st, 1000, flush_cb, s);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		free(fs[i]->text);
		fs[i]->text = fs[i]->pend;
		fs[i]->pend = NULL;
	}
	s->npend -= n;
	/* the rest on the next loop turn: other work runs in between */
	if (s->npend > 0)
		s->flush_timer = stage_add_timer(st, 0, flush_cb, s);
}

static int
src_cred_load(void *state, const char *ns, char *user, size_t userlen, char *password,
    size_t pwlen)
{
	struct src *s = state;

	return acl_env_read(acl_state_dir(s->a), ns, user, userlen, password, pwlen);
}

static int
src_cred_save(void *state, const char *ns, const char *user, const char *password,
    char *err, size_t errlen)
{
	struct src *s = state;
	char path[4096];

	if (acl_env_write(acl_state_dir(s->a), ns, user, password) < 0) {
		if (acl_env_path(acl_state_dir(s->a), ns, path, sizeof(path)) < 0)
			snprintf(path, sizeof(path), "%s/?", acl_state_dir(s->a));
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int
src_cred_remove(void *state, const char *ns)
{
	struct src *s = state;

	return acl_env_remove(acl_state_dir(s->a), ns);
}

const struct acl_source acl_source_store = {
	.name = "store",
	.start = src_start,
	.load = src_load,
	.stop = src_stop,
	.report = src_report,
	.flush = src_flush,
	.cred_load = src_cred_load,
	.cred_save = src_cred_save,
	.cred_remove = src_cred_remove,
};

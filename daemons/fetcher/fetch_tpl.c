/*
 * fetch_tpl - DecofileTemplates as the fetcher sees them: a schedule per
 * template (the same sources as a Decofile, fetched by the same pool), a
 * fetched tree recorded as the template's generation (template_trees in
 * the journal, never the fetches table, where a Decofile of the same name
 * would shadow it), and the Decofiles to wake when it changed: only those
 * whose last render used the template (one "template" item to the
 * renderer, whose rollout enqueues them wave by wave), and those that list
 * it but were never rendered.  Whether a woken site takes the new
 * generation is the renderer's call (its update policy and the rollout).  Templates are fetched by every
 * instance (no job lock: the record is idempotent by hash); a Decofile is
 * woken only by the instance holding its lock.  Loop thread only.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/log.h"
#include "common/resource.h"
#include "common/stage.h"
#include "common/stage_watch.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/fetcher/fetch_lock.h"
#include "daemons/fetcher/fetcher.h"
#include "proto/proto.h"

struct src *
fetch_tpl_find(struct fetcher *f, const char *ns, const char *name)
{
	for (struct src *s = f->tpls; s != NULL; s = s->next)
		if (strcmp(s->ns, ns) == 0 && strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

/* a DecofileTemplate was put (or listed) */
static void
upsert(struct stage *st, const char *ns, const char *name, const char *val, size_t len)
{
	struct fetcher *f = F(st);
	struct src *s = fetch_tpl_find(f, ns, name);
	const char *p;
	char h[65];
	yajl_val doc;
	struct buf b;
	struct jw w;
	int64_t ms;

	if ((doc = json_parse(val, len, NULL)) == NULL) {
		log_kv(LOG_WARN, "DecofileTemplate is not JSON; ignored", "ns", ns, "name", name,
		    NULL);
		return;
	}
	buf_init(&b);
	jw_init(&w, &b);
	jw_value(&w, json_get(doc, "spec", NULL));
	buf_printf(&b, "#%lld", (long long)decofile_generation(doc));
	sha256_hex(b.data, b.len, h);
	buf_free(&b);
	if (s == NULL) {
		s = xcalloc(1, sizeof(*s));
		snprintf(s->ns, sizeof(s->ns), "%s", ns);
		snprintf(s->name, sizeof(s->name), "%s", name);
		s->tpl = 1;
		s->next = f->tpls;
		f->tpls = s;
	} else if (strcmp(s->spec_hash, h) == 0) {
		s->listed = 1;
		yajl_tree_free(doc);
		return;
	}
	s->gone = 0;
	s->listed = 1;
	memcpy(s->spec_hash, h, sizeof(h));
	free(s->doc);
	s->doc = xstrndup(val, len);
	snprintf(s->source, sizeof(s->source), "%s", decofile_source(doc));
	s->generation = decofile_generation(doc);
	s->period_ms = 0;
	if (strcmp(s->source, "inline") != 0) {
		p = json_get_str(doc, "spec", s->source, "period", NULL);
		s->period_ms = p != NULL && parse_duration_ms(p, &ms) == 0 && ms >= 1000 ? ms :
		    f->poll_ms;
	}
	s->failures = 0;
	yajl_tree_free(doc);
	fetcher_schedule(st, s, 0, 1);
}

static void
drop(struct stage *st, struct src *s)
{
	log_kv(LOG_INFO, "DecofileTemplate deleted; schedule dropped (sites keep their "
	    "last render)", "ns", s->ns, "name", s->name, NULL);
	if (s->busy)
		s->gone = 1;
	else
		fetcher_src_free(st, s);
}

static int
relist(struct stage *st)
{
	struct fetcher *f = F(st);
	struct store_list l;
	char kind[254], ns[254], name[254];

	if (store_list(stage_store(st), f->tpl_prefix, &l) < 0) {
		log_kv(LOG_ERROR, "cannot list DecofileTemplates", "error",
		    store_error(stage_store(st)), NULL);
		return -1;
	}
	for (struct src *s = f->tpls; s != NULL; s = s->next)
		s->listed = 0;
	for (size_t i = 0; i < l.n; i++)
		if (key_parse_resource(l.kvs[i].key, kind, ns, name) == 0)
			upsert(st, ns, name, l.kvs[i].value, l.kvs[i].vlen);
	for (struct src *s = f->tpls, *next; s != NULL; s = next) {
		next = s->next;
		if (!s->listed && !s->gone)
			drop(st, s);
	}
	store_list_free(&l);
	return 0;
}

static void
on_event(void *arg, const struct store_event *ev)
{
	struct stage *st = arg;
	char kind[254], ns[254], name[254];
	struct src *s;

	if (ev->type == STORE_EV_RELIST) {
		relist(st);
		return;
	}
	if (key_parse_resource(ev->key, kind, ns, name) < 0 || strcmp(kind, "templates") != 0)
		return;
	if (ev->type == STORE_EV_DELETE) {
		if ((s = fetch_tpl_find(F(st), ns, name)) != NULL && !s->gone)
			drop(st, s);
	} else {
		upsert(st, ns, name, ev->value, ev->vlen);
	}
}

int
fetch_tpl_start(struct stage *st)
{
	struct fetcher *f = F(st);

	f->tpl_prefix = key_resource_prefix("templates", NULL);
	if ((f->tpl_watch = store_watch_open(st, f->tpl_prefix, on_event, st, 1000,
	    &f->tpl_sw)) == NULL)
		return -1;
	return relist(st);
}

void
fetch_tpl_stop(struct stage *st)
{
	struct fetcher *f = F(st);

	while (f->tpls != NULL)
		fetcher_src_free(st, f->tpls);
	store_watch_close(f->tpl_watch, f->tpl_sw);
	f->tpl_sw = NULL;
	f->tpl_watch = NULL;
	free(f->tpl_prefix);
	f->tpl_prefix = NULL;
}

/* push_render - a renderer item for Decofile d from its last handed fetch; 1, 0 none, -1 */
static int
push_render(struct stage *st, struct src *d)
{
	char hash[65], commit[96], detail[PROTO_MAX_DETAIL + 1];
	struct proto_render_detail rd;
	int64_t generation;
	int rc;

	if (d->suspended || !fetch_lock_held(F(st)->locks, d->ns, d->name))
		return 0;
	if ((rc = fetcher_last_handed(st, d->ns, d->name, hash, commit, &generation)) != 0)
		return rc < 0 ? -1 : 0;	/* never fetched: its own fetch renders it */
	memset(&rd, 0, sizeof(rd));
	snprintf(rd.source, sizeof(rd.source), "%s", d->source);
	snprintf(rd.commit, sizeof(rd.commit), "%s", commit);
	rd.generation = generation;
	if (proto_render_detail_encode(&rd, detail, sizeof(detail)) < 0)
		return -1;
	return stage_push(st, "renderer", "decofile", d->ns, d->name, hash, detail) < 0 ? -1 : 1;
}

/* lists - whether Decofile text doc lists template tpl in spec.templates */
static int
lists(const char *text, const char *tpl)
{
	yajl_val doc = json_parse(text, strlen(text), NULL), l;
	int found = 0;

	l = doc != NULL ? json_get(doc, "spec", "templates", NULL) : NULL;
	for (size_t i = 0; l != NULL && YAJL_IS_ARRAY(l) && i < l->u.array.len; i++) {
		yajl_val v = l->u.array.values[i];
		const char *n = YAJL_IS_STRING(v) ? v->u.string : json_get_str(v, "name", NULL);

		found |= n != NULL && strcmp(n, tpl) == 0;
	}
	yajl_tree_free(doc);
	return found;
}

struct users {
	struct stage *st;
	const char *ns;
	int n, failed;
};

int
fetch_tpl_hand_on(struct stage *st, struct src *s, struct job *j)
{
	struct journal *jl = stage_journal(st);
	struct users u = { st, s->ns, 0, 0 };
	char hdr[65], n[32], gen[32];
	int rc;

	if (journal_savepoint(jl, "tpl_hand_on") < 0)
		return -1;
	rc = journal_template_record(jl, s->ns, s->name, j->generation, j->res.commit,
	    j->res.tree_hash);
	/*
	 * the sites that used it: the renderer's rollout (waves, a bounded
	 * rate, behind the sites' own edits) reaches them, not one push each
	 */
	if (rc == 1 && stage_push(st, "renderer", "template", s->ns, s->name, j->res.tree_hash,
	    "") < 0)
		u.failed = 1;
	/* a Decofile that lists it and was never rendered: always woken */
	for (struct src *d = F(st)->srcs; rc == 1 && !u.failed && d != NULL; d = d->next) {
		int r;

		if (strcmp(d->ns, s->ns) != 0 || d->doc == NULL || !lists(d->doc, s->name))
			continue;
		if ((r = journal_last_render(jl, d->ns, d->name, hdr, n, NULL)) < 0) {
			u.failed = 1;
			break;
		}
		if (r == 1) {
			if ((r = push_render(st, d)) < 0)
				u.failed = 1;
			u.n += r > 0;
		}
	}
	if (rc < 0 || u.failed) {
		log_kv(LOG_ERROR, "journal: cannot record the template", "ns", s->ns, "name",
		    s->name, "error", journal_error(jl), NULL);
		journal_savepoint_rollback(jl, "tpl_hand_on");
		return -1;
	}
	if (journal_savepoint_release(jl, "tpl_hand_on") < 0) {
		journal_savepoint_rollback(jl, "tpl_hand_on");
		return -1;
	}
	if (rc == 1) {
		snprintf(n, sizeof(n), "%d", u.n);
		snprintf(gen, sizeof(gen), "%lld", (long long)j->generation);
		log_kv(LOG_INFO, "template generation recorded", "ns", s->ns, "name", s->name,
		    "generation", gen, "tree", j->res.tree_hash, "decofiles_woken", n, NULL);
	}
	return rc;
}

void
fetch_tpl_kick(struct stage *st, struct src *s)
{
	int rc;

	if (stage_begin(st) < 0)
		return;
	if ((rc = push_render(st, s)) <= 0 || stage_commit(st, NULL, NULL) < 0) {
		stage_rollback(st);
		if (rc < 0)
			log_kv(LOG_WARN, "cannot hand on the template apply", "ns", s->ns, "name",
			    s->name, NULL);
		return;
	}
	log_kv(LOG_INFO, "template apply requested; rendering", "ns", s->ns, "name", s->name,
	    NULL);
}

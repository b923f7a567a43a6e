/*
 * web_hook - the git push receivers' rules, without I/O: a delivery's
 * signature checked against the provider's secret (constant time), the
 * push read from its JSON, clone URLs brought to one form, the Decofiles a
 * push concerns, and the ring of delivery ids already seen.  web_push.c
 * does the HTTP and the store around them; t/unit/web_hook_test checks
 * these rules one by one.
 */
#ifndef DECOD_WEB_HOOK_H
#define DECOD_WEB_HOOK_H

#include <stddef.h>

#include <yajl/yajl_tree.h>

enum web_provider { WEB_GITHUB = 0, WEB_GITLAB, WEB_GITEA, WEB_NPROVIDERS };

/* web_provider_name - "github", "gitlab", "gitea" */
const char *web_provider_name(enum web_provider p);

/*
 * web_hook_verify - whether header (the value of X-Hub-Signature-256,
 * X-Gitlab-Token or X-Gitea-Signature as sent, NULL when absent) proves
 * that body came from the holder of secret.  GitHub: "sha256=" and the
 * hex HMAC-SHA256 of the raw body; Gitea: the bare hex HMAC-SHA256;
 * GitLab: the secret itself.  Every comparison is in constant time (the
 * GitLab token is compared by its SHA-256, so neither its bytes nor its
 * length leak).  1: genuine; 0: missing, malformed or wrong.  An empty
 * secret verifies nothing.
 */
int web_hook_verify(enum web_provider p, const char *secret, size_t slen,
    const char *header, const char *body, size_t blen);

/*
 * web_url_normalise - a repository address in one form, so the
 * Decofile's and the git host's spellings of it compare equal:
 * "https://GitHub.com/Acme/Loja.git", "git@github.com:acme/loja",
 * "ssh://git@github.com:22/acme/loja/" all give "github.com/acme/loja"
 * (scheme, user, port, trailing "/" and ".git" dropped, lower case);
 * "file:///srv/x.git" and "/srv/x.git" give "/srv/x" (case kept).
 * 0, or -1 when url is empty or does not fit in len.
 */
int web_url_normalise(const char *url, char *out, size_t len);

/* a push as the git host described it */
#define WEB_PUSH_URLS 8
struct web_push {
	char *urls[WEB_PUSH_URLS];	/* the repository's addresses, normalised */
	size_t nurls;
	char *branch;		/* "main" of "refs/heads/main"; NULL for a tag */
	char *default_branch;	/* the repository's, NULL if not said */
	char *after;		/* the new head commit, NULL if not said */
};

/*
 * web_push_parse - read a push event's JSON (GitHub, Gitea, GitLab shapes).
 * 0, or -1 with why in err (not JSON, no repository address, no ref).
 * Free with web_push_free (NULL is a no-op; p itself is the caller's).
 */
int web_push_parse(enum web_provider pv, const char *body, size_t len, struct web_push *p,
    char *err, size_t errlen);
void web_push_free(struct web_push *p);

/*
 * what a Decofile fetches from, in the form a push is compared with: the
 * repository's address normalised and the ref it follows.  Kept per
 * Decofile by the web stage (web_rows.c), so a push is matched without
 * reading the store.
 */
struct web_push_source {
	char *url;		/* normalised; NULL: no push can concern it */
	char *ref;		/* refs/heads/ stripped; NULL: the default branch */
};

/*
 * web_push_source_of - s from Decofile doc: a git source's spec.git.url and
 * spec.git.ref, or a github source's github.com/org/repo and
 * spec.github.commit (a full sha never moves: no push concerns it).  1 when
 * a push can concern it, 0 when not (s->url NULL).  Free with
 * web_push_source_free (s itself is the caller's).
 */
int web_push_source_of(yajl_val doc, struct web_push_source *s);
void web_push_source_free(struct web_push_source *s);
/* web_push_source_matches - s fetches from the pushed repository and branch */
int web_push_source_matches(const struct web_push_source *s, const struct web_push *p);

/*
 * web_push_matches - whether the Decofile doc fetches from the pushed
 * repository and branch: a git source whose spec.git.url normalises to one
 * of the push's addresses and whose spec.git.ref (refs/heads/ stripped;
 * unset: the default branch) is the pushed branch, or a github source whose
 * spec.github.org/repo is github.com's and whose spec.github.commit is that
 * branch (a full sha never moves: never matched).  1 or 0.
 */
int web_push_matches(yajl_val doc, const struct web_push *p);

/*
 * the delivery ids seen last, n at most (the oldest forgotten first), so
 * a redelivery is acknowledged without a second sync.  web_ring_free(NULL)
 * is a no-op.
 */
struct web_ring;
struct web_ring *web_ring_new(size_t n);
void web_ring_free(struct web_ring *r);
/* web_ring_seen - 1 if id was seen already; else 0, and it is remembered */
int web_ring_seen(struct web_ring *r, const char *id);

#endif

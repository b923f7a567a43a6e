/*
 * web_hook_test - the push receivers' rules: signatures (GitHub's own
 * documented vector, wrong, missing, truncated, other case), clone URLs in
 * one form, a push's JSON per provider, which Decofiles a push concerns,
 * and the delivery ring's memory.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "daemons/web/web_hook.h"
#include "t/tap.h"

#define SECRET	"It's a Secret to Everybody"
#define BODY	"Hello, World!"
#define SIG	"757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"

static void
signatures(void)
{
	static const struct {
		const char *label;
		enum web_provider p;
		const char *header;
		int want;
	} rows[] = {
		{ "github: GitHub's documented vector", WEB_GITHUB, "sha256=" SIG, 1 },
		{ "github: upper-case hex", WEB_GITHUB,
		  "sha256=757107EA0EB2509FC211221CCE984B8A37570B6D7586C22C46F4379C8B043E17", 1 },
		{ "github: missing", WEB_GITHUB, NULL, 0 },
		{ "github: empty", WEB_GITHUB, "", 0 },
		{ "github: no sha256= prefix", WEB_GITHUB, SIG, 0 },
		{ "github: sha1= prefix", WEB_GITHUB, "sha1=" SIG, 0 },
		{ "github: truncated", WEB_GITHUB, "sha256=757107ea0eb2509fc211221cce984b8a", 0 },
		{ "github: one digit wrong", WEB_GITHUB,
		  "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e18", 0 },
		{ "github: trailing junk", WEB_GITHUB, "sha256=" SIG "00", 0 },
		{ "github: not hex", WEB_GITHUB,
		  "sha256=zz7107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", 0 },
		{ "gitea: bare hex", WEB_GITEA, SIG, 1 },
		{ "gitea: with github's prefix", WEB_GITEA, "sha256=" SIG, 0 },
		{ "gitea: truncated", WEB_GITEA, "757107ea", 0 },
		{ "gitea: missing", WEB_GITEA, NULL, 0 },
		{ "gitlab: the token itself", WEB_GITLAB, SECRET, 1 },
		{ "gitlab: a prefix of it", WEB_GITLAB, "It's a Secret", 0 },
		{ "gitlab: longer", WEB_GITLAB, SECRET "!", 0 },
		{ "gitlab: the HMAC is not the token", WEB_GITLAB, SIG, 0 },
		{ "gitlab: missing", WEB_GITLAB, NULL, 0 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		is_int(web_hook_verify(rows[i].p, SECRET, strlen(SECRET), rows[i].header, BODY,
		    strlen(BODY)), rows[i].want, "%s", rows[i].label);
	is_int(web_hook_verify(WEB_GITHUB, SECRET, strlen(SECRET), "sha256=" SIG, BODY "\n",
	    strlen(BODY) + 1), 0, "github: a body changed by one byte");
	is_int(web_hook_verify(WEB_GITHUB, "other", 5, "sha256=" SIG, BODY, strlen(BODY)), 0,
	    "github: another secret");
	is_int(web_hook_verify(WEB_GITHUB, "", 0, "sha256=" SIG, BODY, strlen(BODY)), 0,
	    "github: an empty secret verifies nothing");
	is_int(web_hook_verify(WEB_GITLAB, "", 0, "", BODY, strlen(BODY)), 0,
	    "gitlab: an empty secret and token verify nothing");
}

static void
urls(void)
{
	static const struct {
		const char *in, *want;
	} rows[] = {
		{ "https://github.com/acme/loja.git", "github.com/acme/loja" },
		{ "https://GitHub.com/Acme/Loja", "github.com/acme/loja" },
		{ "https://github.com/acme/loja/", "github.com/acme/loja" },
		{ "https://github.com/acme/loja.git/", "github.com/acme/loja" },
		{ "http://github.com/acme/loja", "github.com/acme/loja" },
		{ "git@github.com:acme/loja.git", "github.com/acme/loja" },
		{ "git@github.com:acme/loja", "github.com/acme/loja" },
		{ "ssh://git@github.com/acme/loja.git", "github.com/acme/loja" },
		{ "ssh://git@github.com:22/acme/loja", "github.com/acme/loja" },
		{ "git://github.com/acme/loja.git", "github.com/acme/loja" },
		{ "https://user@gitlab.example:8443/group/sub/loja.git",
		  "gitlab.example/group/sub/loja" },
		{ "  https://github.com/acme/loja.git\n", "github.com/acme/loja" },
		{ "file:///srv/git/Loja.git", "/srv/git/Loja" },
		{ "/srv/git/Loja.git", "/srv/git/Loja" },
		{ "/srv/git/loja/", "/srv/git/loja" },
	};
	char out[256];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int rc = web_url_normalise(rows[i].in, out, sizeof(out));

		is_str(rc == 0 ? out : NULL, rows[i].want, "normalise %s", rows[i].in);
	}
	ok(web_url_normalise("", out, sizeof(out)) < 0, "an empty URL is refused");
	ok(web_url_normalise(NULL, out, sizeof(out)) < 0, "no URL is refused");
	ok(web_url_normalise("https://github.com/acme/loja", out, 8) < 0,
	    "a URL longer than the buffer is refused");
	ok(web_url_normalise("https://", out, sizeof(out)) < 0, "a scheme alone is refused");
}

static yajl_val
df(const char *json)
{
	yajl_val v = json_parse(json, strlen(json), NULL);

	if (v == NULL)
		abort();
	return v;
}

static void
pushes(void)
{
	static const char github[] = "{\"ref\":\"refs/heads/main\",\"after\":\"abc123\","
	    "\"repository\":{\"full_name\":\"Acme/Loja\","
	    "\"clone_url\":\"https://github.com/Acme/Loja.git\","
	    "\"ssh_url\":\"git@github.com:Acme/Loja.git\","
	    "\"html_url\":\"https://github.com/Acme/Loja\",\"default_branch\":\"main\"}}";
	static const char gitlab[] = "{\"object_kind\":\"push\",\"ref\":\"refs/heads/prod\","
	    "\"project\":{\"git_http_url\":\"https://gitlab.example/shop/loja.git\","
	    "\"git_ssh_url\":\"git@gitlab.example:shop/loja.git\",\"default_branch\":\"main\"}}";
	static const char tag[] = "{\"ref\":\"refs/tags/v1\",\"repository\":"
	    "{\"clone_url\":\"https://github.com/acme/loja.git\"}}";
	static const struct {
		const char *label, *doc;
		int github_main, gitlab_prod;
	} rows[] = {
		{ "git source, https, same branch",
		  "{\"spec\":{\"source\":\"git\",\"git\":{\"url\":\"https://github.com/acme/loja\","
		  "\"ref\":\"main\"}}}", 1, 0 },
		{ "git source, ssh form, refs/heads/ ref",
		  "{\"spec\":{\"source\":\"git\",\"git\":{\"url\":\"git@github.com:acme/loja.git\","
		  "\"ref\":\"refs/heads/main\"}}}", 1, 0 },
		{ "git source, no ref: the default branch",
		  "{\"spec\":{\"source\":\"git\",\"git\":{\"url\":\"https://github.com/acme/loja\"}}}",
		  1, 0 },
		{ "git source, another branch",
		  "{\"spec\":{\"source\":\"git\",\"git\":{\"url\":\"https://github.com/acme/loja\","
		  "\"ref\":\"staging\"}}}", 0, 0 },
		{ "git source, another repository",
		  "{\"spec\":{\"source\":\"git\",\"git\":{\"url\":\"https://github.com/acme/loja2\","
		  "\"ref\":\"main\"}}}", 0, 0 },
		{ "git source on gitlab, branch prod",
		  "{\"spec\":{\"source\":\"git\",\"git\":{\"url\":\"https://gitlab.example/Shop/Loja\","
		  "\"ref\":\"prod\"}}}", 0, 1 },
		{ "github source, branch",
		  "{\"spec\":{\"source\":\"github\",\"github\":{\"org\":\"acme\",\"repo\":\"loja\","
		  "\"commit\":\"main\"}}}", 1, 0 },
		{ "github source, a full sha never moves",
		  "{\"spec\":{\"source\":\"github\",\"github\":{\"org\":\"acme\",\"repo\":\"loja\","
		  "\"commit\":\"0123456789abcdef0123456789abcdef01234567\"}}}", 0, 0 },
		{ "inline source",
		  "{\"spec\":{\"source\":\"inline\",\"inline\":{\"value\":{}}}}", 0, 0 },
		{ "no source", "{\"spec\":{}}", 0, 0 },
	};
	struct web_push gh, gl, tg;
	char err[256];

	is_int(web_push_parse(WEB_GITHUB, github, strlen(github), &gh, err, sizeof(err)), 0,
	    "a GitHub push is read");
	is_str(gh.branch, "main", "its branch");
	is_str(gh.default_branch, "main", "its default branch");
	is_str(gh.after, "abc123", "its new head");
	is_str(gh.nurls > 0 ? gh.urls[0] : NULL, "github.com/acme/loja",
	    "its address normalised");
	is_int((long long)gh.nurls, 1, "the four spellings are one address");
	is_int(web_push_parse(WEB_GITLAB, gitlab, strlen(gitlab), &gl, err, sizeof(err)), 0,
	    "a GitLab push is read");
	is_str(gl.branch, "prod", "its branch");
	is_int(web_push_parse(WEB_GITHUB, tag, strlen(tag), &tg, err, sizeof(err)), 0,
	    "a tag push is read");
	ok(tg.branch == NULL, "a tag is no branch");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		yajl_val d = df(rows[i].doc);

		is_int(web_push_matches(d, &gh), rows[i].github_main, "github push main: %s",
		    rows[i].label);
		is_int(web_push_matches(d, &gl), rows[i].gitlab_prod, "gitlab push prod: %s",
		    rows[i].label);
		is_int(web_push_matches(d, &tg), 0, "a tag push syncs nothing: %s",
		    rows[i].label);
		yajl_tree_free(d);
	}
	web_push_free(&gh);
	web_push_free(&gl);
	web_push_free(&tg);
	web_push_free(NULL);

	ok(web_push_parse(WEB_GITHUB, "[", 1, &gh, err, sizeof(err)) < 0, "not JSON: refused");
	ok(web_push_parse(WEB_GITHUB, "[]", 2, &gh, err, sizeof(err)) < 0,
	    "not an object: refused");
	ok(web_push_parse(WEB_GITHUB, "{\"ref\":\"refs/heads/x\"}", 22, &gh, err,
	    sizeof(err)) < 0, "no repository: refused");
	ok(strstr(err, "repository") != NULL, "and the reason says so: %s", err);
	ok(web_push_parse(WEB_GITHUB, "{\"repository\":{\"clone_url\":\"https://h/a/b\"}}", 45,
	    &gh, err, sizeof(err)) < 0, "no ref: refused");
}

static void
ring(void)
{
	struct web_ring *r = web_ring_new(3);
	char id[16];

	is_int(web_ring_seen(r, "a"), 0, "a new id is not seen");
	is_int(web_ring_seen(r, "a"), 1, "the same id again is seen");
	is_int(web_ring_seen(r, "b"), 0, "another is new");
	is_int(web_ring_seen(r, "c"), 0, "a third is new");
	is_int(web_ring_seen(r, "a"), 1, "the first is still remembered at the size");
	is_int(web_ring_seen(r, "d"), 0, "a fourth is new");
	is_int(web_ring_seen(r, "a"), 0, "and the oldest is forgotten");
	for (int i = 0; i < 1000; i++) {
		snprintf(id, sizeof(id), "x%d", i);
		(void)web_ring_seen(r, id);
	}
	is_int(web_ring_seen(r, "x999"), 1, "bounded: the newest of many is seen");
	is_int(web_ring_seen(r, "x5"), 0, "bounded: an old one is not");
	web_ring_free(r);
	web_ring_free(NULL);
}

int
main(void)
{
	signatures();
	urls();
	pushes();
	ring();
	return done_testing();
}

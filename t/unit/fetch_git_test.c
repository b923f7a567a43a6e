/*
 * fetch_git_test - the git source against real repositories (file://
 * remotes, real git): a branch, an annotated tag, a sha, a folder inside
 * the repository, a new commit, a missing ref and remote; and, through a
 * trace of every exec, that the secret never reaches argv or the
 * environment (only the secret file's path does).  The test program is
 * also its own GIT_ASKPASS helper, as the fetcher is.
 */
#include "config.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json.h"
#include "common/spool.h"
#include "common/util.h"
#include "daemons/fetcher/fetch_git.h"
#include "daemons/fetcher/fetch_run.h"
#include "t/tap.h"

#define SECRET "s3cr3t-t0ken-value"

static char top[256];
static int leaks, execs;

static void
trace(void *arg, char *const *argv, char *const *envp)
{
	(void)arg;
	execs++;
	for (int i = 0; argv[i] != NULL; i++)
		if (strstr(argv[i], SECRET) != NULL)
			leaks++;
	for (int i = 0; envp[i] != NULL; i++)
		if (strstr(envp[i], SECRET) != NULL)
			leaks++;
}

static void __attribute__((format(printf, 1, 2)))
sh(const char *fmt, ...)
{
	va_list ap;
	char cmd[4096];

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		diag("command failed: %s", cmd);
}

static char *
rev(const char *what)
{
	char *cmd = xasprintf("git -C %s/work rev-parse %s", top, what), line[64] = "";
	FILE *f = popen(cmd, "r");

	if (f != NULL) {
		if (fgets(line, sizeof(line), f) == NULL)
			line[0] = '\0';
		pclose(f);
	}
	free(cmd);
	line[strcspn(line, "\n")] = '\0';
	return xstrdup(line);
}

/* the blob of key in the manifest named by tree, as a new string */
static char *
block(struct spool *sp, const char *tree, const char *key, char *path_out)
{
	char *man = spool_get(sp, tree, NULL), *out = NULL;
	yajl_val doc = man ? json_parse(man, strlen(man), NULL) : NULL, e;

	e = json_get(doc, "entries", NULL);
	for (size_t i = 0; e && YAJL_IS_ARRAY(e) && i < e->u.array.len; i++) {
		const char *k = json_get_str(e->u.array.values[i], "key", NULL);

		if (k && strcmp(k, key) == 0) {
			out = spool_get(sp, json_get_str(e->u.array.values[i], "blob", NULL), NULL);
			if (path_out)
				strcpy(path_out, json_get_str(e->u.array.values[i], "path", NULL));
		}
	}
	yajl_tree_free(doc);
	free(man);
	return out;
}

int
main(int argc, char **argv)
{
	struct fetch_git_req req;
	struct fetch_result res;
	struct spool *sp;
	char id[41], path[1024], *c1, *c2, *b, *url, *tree1, *self;
	const char *exe = "/proc/self/exe";

	(void)argc;
	if (getenv(FETCH_GIT_ASKPASS_ENV) != NULL)
		return fetch_git_askpass_main(argv[1]);
	if (fetch_find_program("git") == NULL) {
		printf("1..0 # SKIP git is not installed\n");
		return 0;
	}
	snprintf(top, sizeof(top), "/tmp/fetch_git_test.%ld", (long)getpid());
	mkdir_p(top, 0700);
	sp = spool_open(xasprintf("%s/spool", top));
	sh("cd %s && git init -q -b main work && cd work && git config user.email t@t && "
	    "git config user.name t && mkdir -p .deco/blocks/pages docs && "
	    "printf '{\"v\": 1}' > .deco/blocks/Header.json && "
	    "printf '[1]' > '.deco/blocks/pages/Home%%20Page.json' && "
	    "printf 'readme' > .deco/blocks/README.md && printf '{}' > docs/Other.json && "
	    "git add -A && git commit -qm one && git tag -a v1 -m v1", top);
	sh("cd %s/work && printf '{\"v\": 2}' > .deco/blocks/Header.json && "
	    "git commit -qam two", top);
	sh("git clone -q --bare %s/work %s/remote.git", top, top);
	c1 = rev("HEAD~1");
	c2 = rev("HEAD");
	url = xasprintf("file://%s/remote.git", top);
	self = realpath(exe, NULL);

	memset(&req, 0, sizeof(req));
	req.url = url;
	req.ref = "main";
	req.dir = ".deco/blocks";
	req.cache_root = xasprintf("%s/git", top);
	req.timeout_ms = 30000;
	req.lim.max_file = 1 << 20;
	req.lim.max_tree = 1 << 22;

	is_int(fetch_git_resolve(&req, id, &res), 0, "ls-remote resolves a branch");
	is_str(id, c2, "branch main is the newest commit");
	is_int(fetch_git_tree(sp, &req, id, &res), 0, "shallow fetch and read the tree (%s)",
	    res.error);
	is_str(res.commit, c2, "the result carries the commit");
	is_int((long long)res.entries, 2, "two blocks under .deco/blocks (README ignored)");
	b = block(sp, res.tree_hash, "Header", path);
	is_str(b, "{\"v\": 2}", "the block's bytes at that commit");
	is_str(path, ".deco/blocks/Header.json", "path is the path in the repository");
	free(b);
	b = block(sp, res.tree_hash, "Home Page", NULL);
	is_str(b, "[1]", "a file in a subfolder, key form-decoded");
	free(b);
	tree1 = xstrdup(res.tree_hash);
	is_int(fetch_git_tree(sp, &req, id, &res), 0, "the same commit again (from the cache)");
	is_str(res.tree_hash, tree1, "same commit, same tree hash");

	req.ref = "v1";
	is_int(fetch_git_resolve(&req, id, &res), 0, "an annotated tag resolves");
	is_int(fetch_git_tree(sp, &req, id, &res), 0, "a tag fetches (%s)", res.error);
	is_str(res.commit, c1, "the tag is peeled to its commit");
	b = block(sp, res.tree_hash, "Header", NULL);
	is_str(b, "{\"v\": 1}", "the tag's content");
	free(b);
	ok(strcmp(res.tree_hash, tree1) != 0, "another commit's content, another tree hash");

	req.ref = c1;
	is_int(fetch_git_resolve(&req, id, &res), 0, "a sha is taken as is");
	is_str(id, c1, "without asking the remote");
	is_int(fetch_git_tree(sp, &req, id, &res), 0, "a sha fetches");
	is_str(res.commit, c1, "that commit");

	req.ref = "main";
	req.dir = "docs";
	is_int(fetch_git_resolve(&req, id, &res), 0, "resolve again");
	is_int(fetch_git_tree(sp, &req, id, &res), 0, "another folder of the repository");
	b = block(sp, res.tree_hash, "Other", NULL);
	is_str(b, "{}", "the block of that folder");
	free(b);
	req.dir = "nope";
	is_int(fetch_git_tree(sp, &req, id, &res), -1, "a missing folder fails");
	ok(strstr(res.error, "'nope' not found") != NULL, "and says so (%s)", res.error);
	req.dir = ".deco/blocks";

	req.ref = "no-such-branch";
	is_int(fetch_git_resolve(&req, id, &res), -1, "a missing ref fails");
	is_str(res.reason, "FetchError", "reason FetchError");
	ok(strstr(res.error, "no-such-branch") != NULL, "message names the ref (%s)", res.error);
	req.ref = "--upload-pack=evil";
	is_int(fetch_git_resolve(&req, id, &res), -1, "a ref that looks like an option is refused");

	req.ref = "main";
	req.url = "ext::sh -c touch% /tmp/pwned";
	is_int(fetch_git_resolve(&req, id, &res), -1, "ext:: URLs are refused");
	req.url = xasprintf("file://%s/missing.git", top);
	is_int(fetch_git_resolve(&req, id, &res), -1, "a missing remote fails");
	ok(strstr(res.error, "git ls-remote") != NULL, "message says what failed (%s)", res.error);

	/* credentials: only the file's path travels */
	write_file_atomic(xasprintf("%s/creds", top), SECRET "\n", strlen(SECRET) + 1, 0600);
	req.url = url;
	req.secret_file = xasprintf("%s/creds", top);
	req.askpass = self;
	fetch_run_trace(trace, NULL);
	sh("cd %s/work && printf '{\"v\": 3}' > .deco/blocks/Header.json && git commit -qam three && "
	    "git push -q %s/remote.git main", top, top);
	is_int(fetch_git_resolve(&req, id, &res), 0, "resolve with a secret configured");
	is_int(fetch_git_tree(sp, &req, id, &res), 0, "fetch with a secret configured");
	b = block(sp, res.tree_hash, "Header", NULL);
	is_str(b, "{\"v\": 3}", "a new commit is fetched");
	free(b);
	fetch_run_trace(NULL, NULL);
	ok(execs > 0, "git was run %d times", execs);
	is_int(leaks, 0, "the secret is in no argv and no environment");
	/* the askpass side, as git runs it */
	{
		static const struct { const char *file, *prompt, *want; } ap[] = {
			{ "deploy:pw:with:colons\n", "Username for 'https://h': ", "deploy" },
			{ "deploy:pw:with:colons\n", "Password for 'https://deploy@h': ",
			    "pw:with:colons" },
			{ "ghp_token\n", "Username for 'https://h': ", "x-access-token" },
			{ "ghp_token\n", "Password for 'https://x-access-token@h': ", "ghp_token" },
		};
		char *f = xasprintf("%s/ap", top), line[256], *cmd;
		FILE *p;

		for (size_t i = 0; i < sizeof(ap) / sizeof(ap[0]); i++) {
			write_file_atomic(f, ap[i].file, strlen(ap[i].file), 0600);
			cmd = xasprintf("%s=%s '%s' \"%s\"", FETCH_GIT_ASKPASS_ENV, f, self,
			    ap[i].prompt);
			line[0] = '\0';
			if ((p = popen(cmd, "r")) != NULL) {
				if (fgets(line, sizeof(line), p) == NULL)
					line[0] = '\0';
				pclose(p);
			}
			line[strcspn(line, "\n")] = '\0';
			is_str(line, ap[i].want, "askpass answers %.8s...", ap[i].prompt);
			free(cmd);
		}
		free(f);
	}
	b = fetch_git_redact("https://user:pw@host/x.git");
	is_str(b, "https://***@host/x.git", "URLs are redacted for messages");
	free(b);
	b = fetch_git_redact("https://user:p@ss@host/x.git");
	is_str(b, "https://***@host/x.git", "an unescaped @ in the password is redacted too");
	free(b);
	b = fetch_git_redact("https://host/a@b.git");
	is_str(b, "https://host/a@b.git", "an @ in the path is not userinfo");
	free(b);

	rm_rf(top);
	return done_testing();
}

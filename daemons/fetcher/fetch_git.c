/*
 * fetch_git - reads git remotes with the git command line (fetch_run: argv
 * built here, no shell, a deadline per call).  It owns the cache of bare
 * repositories under <state_dir>/git/<sha256 of url>: shallow fetches of
 * exactly the commits asked for, no work tree, no automatic gc.  Secrets
 * go only through GIT_ASKPASS pointing at the fetcher itself, which reads
 * the secret file: never argv, URLs, the environment or logs.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "common/hash.h"
#include "common/util.h"
#include "daemons/fetcher/fetch_git.h"
#include "daemons/fetcher/fetch_keys.h"
#include "daemons/fetcher/fetch_run.h"

extern char **environ;

#define MAX_ARGS 32

/* a git invocation being built: argv and environment we own */
struct gitcall {
	char *argv[MAX_ARGS + 1];
	int argc;
	char **envp;
	const struct fetch_git_req *req;
};

int
fetch_git_valid_url(const char *url)
{
	if (url == NULL || url[0] == '\0' || url[0] == '-')
		return 0;
	for (const char *p = url; *p != '\0'; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return 0;
	/* "ext::" runs a command; "fd::" reads our descriptors */
	if (strncmp(url, "ext::", 5) == 0 || strncmp(url, "fd::", 4) == 0)
		return 0;
	return 1;
}

char *
fetch_git_redact(const char *url)
{
	const char *scheme = strstr(url, "://"), *host, *at, *slash;

	if (scheme == NULL)
		return xstrdup(url);
	host = scheme + 3;
	slash = host + strcspn(host, "/?#");
	/* the last '@' of the authority: a password may hold an unescaped one */
	for (at = slash; at > host && at[-1] != '@'; at--)
		;
	if (at == host)
		return xstrdup(url);
	return xasprintf("%.*s***%s", (int)(host - url), url, at - 1);
}

static int
valid_ref(const char *ref)
{
	if (ref[0] == '-' || ref[0] == '\0' || strstr(ref, "..") != NULL)
		return 0;
	for (const char *p = ref; *p != '\0'; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f || strchr(":?*[\\^~", *p))
			return 0;
	return 1;
}

static int
is_hex40(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (!isxdigit((unsigned char)s[i]))
			return 0;
	return i == 40;
}

static int
env_skip(const char *e)
{
	static const char *const drop[] = { "GIT_DIR=", "GIT_WORK_TREE=", "GIT_ASKPASS=",
	    "SSH_ASKPASS=", "GIT_TERMINAL_PROMPT=", "GIT_CONFIG", "GIT_INDEX_FILE=",
	    "GIT_OBJECT_DIRECTORY=", "GIT_ALTERNATE_OBJECT_DIRECTORIES=", "LC_ALL=",
	    FETCH_GIT_ASKPASS_ENV "=", NULL };

	for (int i = 0; drop[i] != NULL; i++)
		if (strncmp(e, drop[i], strlen(drop[i])) == 0)
			return 1;
	return 0;
}

static void
call_init(struct gitcall *g, const struct fetch_git_req *req)
{
	size_t n = 0, k = 0;
	int have_ssh = 0;

	memset(g, 0, sizeof(*g));
	g->req = req;
	while (environ[n] != NULL)
		n++;
	g->envp = xcalloc(n + 8, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		if (env_skip(environ[i]))
			continue;
		if (strncmp(environ[i], "GIT_SSH_COMMAND=", 16) == 0)
			have_ssh = 1;
		g->envp[k++] = xstrdup(environ[i]);
	}
	g->envp[k++] = xstrdup("GIT_TERMINAL_PROMPT=0");
	g->envp[k++] = xstrdup("LC_ALL=C");
	if (!have_ssh)
		g->envp[k++] = xstrdup("GIT_SSH_COMMAND=ssh -o BatchMode=yes");
	if (req->secret_file != NULL && req->askpass != NULL) {
		/* the path of the file, never its content */
		g->envp[k++] = xasprintf("GIT_ASKPASS=%s", req->askpass);
		g->envp[k++] = xasprintf("%s=%s", FETCH_GIT_ASKPASS_ENV, req->secret_file);
	}
	g->envp[k] = NULL;
	g->argv[g->argc++] = xstrdup("git");
	g->argv[g->argc++] = xstrdup("-c");
	g->argv[g->argc++] = xstrdup("credential.helper=");
	g->argv[g->argc++] = xstrdup("-c");
	g->argv[g->argc++] = xstrdup("protocol.ext.allow=never");
	g->argv[g->argc++] = xstrdup("-c");
	g->argv[g->argc++] = xstrdup("gc.auto=0");
}

static void
call_arg(struct gitcall *g, const char *a)
{
	if (g->argc < MAX_ARGS)
		g->argv[g->argc++] = xstrdup(a);
}

static void
call_free(struct gitcall *g)
{
	for (int i = 0; i < g->argc; i++)
		free(g->argv[i]);
	for (size_t i = 0; g->envp != NULL && g->envp[i] != NULL; i++)
		free(g->envp[i]);
	free(g->envp);
}

/* first line of git's stderr, trimmed, with the "fatal: " prefix dropped */
static void
first_line(const struct buf *e, char *out, size_t outlen)
{
	const char *s = e->data ? e->data : "", *nl;
	size_t n;

	while (*s == '\n' || *s == ' ')
		s++;
	if (strncmp(s, "fatal: ", 7) == 0)
		s += 7;
	nl = strchr(s, '\n');
	n = nl != NULL ? (size_t)(nl - s) : strlen(s);
	snprintf(out, outlen, "%.*s", (int)n, s);
}

/*
 * run g; 0 when git exits 0, else -1 with a message in res that starts
 * with what (and never shows the URL's user:password).
 */
static int
call_run(struct gitcall *g, const char *cwd, int in, struct buf *out, size_t max_out,
    const char *what, struct fetch_result *res, int quiet)
{
	struct fetch_cmd c;
	struct buf e;
	char why[512], line[512];
	const char *git = fetch_find_program("git");
	int rc;

	if (git == NULL)
		return fetch_result_error(res, "FetchError", "%s: git is not installed", what);
	g->argv[g->argc] = NULL;
	memset(&c, 0, sizeof(c));
	c.path = git;
	c.argv = g->argv;
	c.envp = g->envp;
	c.cwd = cwd;
	c.stdin_fd = in;
	c.timeout_ms = g->req->timeout_ms > 0 ? g->req->timeout_ms : 60000;
	if (g->req->deadline > 0 && g->req->deadline - now_ms() < c.timeout_ms)
		c.timeout_ms = g->req->deadline - now_ms() > 1 ? g->req->deadline - now_ms() : 1;
	c.max_out = max_out;
	buf_init(&e);
	why[0] = '\0';
	rc = fetch_run(&c, out, &e, why, sizeof(why));
	if (rc != 0 && !quiet) {
		first_line(&e, line, sizeof(line));
		if (rc < 0)
			fetch_result_error(res, "FetchError", "%s: %s%s%s", what, why,
			    line[0] ? ": " : "", line);
		else
			fetch_result_error(res, "FetchError", "%s: %s", what,
			    line[0] ? line : "git failed");
	}
	buf_free(&e);
	return rc == 0 ? 0 : -1;
}

int
fetch_git_resolve(const struct fetch_git_req *req, char *id, struct fetch_result *res)
{
	const char *ref = req->ref != NULL && req->ref[0] != '\0' ? req->ref : "HEAD";
	char *want[2] = { NULL, NULL }, *red, *what;
	struct gitcall g;
	struct buf out;
	int rc, best = 3;

	memset(res, 0, sizeof(*res));
	id[0] = '\0';
	if (!fetch_git_valid_url(req->url))
		return fetch_result_error(res, "FetchError",
		    "source git: spec.git.url is missing or not a usable git URL");
	/* stored before apply refused them (or written around decoctl) */
	if (url_has_credentials(req->url)) {
		red = fetch_git_redact(req->url);
		rc = fetch_result_error(res, "FetchError", "source git: spec.git.url %s "
		    "carries credentials; git would show them in ps: put them in a file "
		    "under secrets_dir and name it in spec.git.secret", red);
		free(red);
		return rc;
	}
	if (is_hex40(ref)) {
		for (int i = 0; i < 40; i++)
			id[i] = (char)tolower((unsigned char)ref[i]);
		id[40] = '\0';
		return 0;
	}
	if (!valid_ref(ref))
		return fetch_result_error(res, "FetchError",
		    "source git: spec.git.ref '%s' is not a valid ref", ref);
	if (strncmp(ref, "refs/", 5) == 0 || strcmp(ref, "HEAD") == 0) {
		want[0] = xstrdup(ref);
	} else {
		want[0] = xasprintf("refs/heads/%s", ref);
		want[1] = xasprintf("refs/tags/%s", ref);
	}
	call_init(&g, req);
	call_arg(&g, "ls-remote");
	call_arg(&g, req->url);
	for (int i = 0; i < 2; i++)
		if (want[i] != NULL)
			call_arg(&g, want[i]);
	red = fetch_git_redact(req->url);
	what = xasprintf("git ls-remote %s", red);
	buf_init(&out);
	rc = call_run(&g, NULL, -1, &out, 1 << 20, what, res, 0);
	for (char *line = out.data; rc == 0 && line != NULL && *line != '\0';) {
		char *nl = strchr(line, '\n'), *tab = strchr(line, '\t');

		if (nl != NULL)
			*nl = '\0';
		if (tab != NULL && tab - line == 40) {
			for (int i = 0; i < 2; i++) {
				if (want[i] != NULL && strcmp(tab + 1, want[i]) == 0 && i < best) {
					best = i;
					memcpy(id, line, 40);
					id[40] = '\0';
				}
			}
		}
		line = nl != NULL ? nl + 1 : NULL;
	}
	if (rc == 0 && id[0] == '\0')
		rc = fetch_result_error(res, "FetchError", "ref '%s' not found at %s", ref, red);
	buf_free(&out);
	call_free(&g);
	free(want[0]);
	free(want[1]);
	free(what);
	free(red);
	return rc;
}

/* the bare cache repository of req->url, created on first use */
static char *
cache_repo(const struct fetch_git_req *req, struct fetch_result *res)
{
	char h[SHA256_HEX_LEN + 1], *dir, *head;
	struct gitcall g;
	struct stat st;

	sha256_hex(req->url, strlen(req->url), h);
	dir = xasprintf("%s/%s", req->cache_root, h);
	head = xasprintf("%s/HEAD", dir);
	if (stat(head, &st) == 0) {
		free(head);
		return dir;
	}
	free(head);
	if (mkdir_p(dir, 0700) < 0) {
		fetch_result_error(res, "FetchError", "cannot make %s: %s", dir, strerror(errno));
		free(dir);
		return NULL;
	}
	call_init(&g, req);
	call_arg(&g, "init");
	call_arg(&g, "--bare");
	call_arg(&g, "-q");
	call_arg(&g, dir);
	if (call_run(&g, NULL, -1, NULL, 0, "git init", res, 0) < 0) {
		free(dir);
		dir = NULL;
	}
	call_free(&g);
	return dir;
}

/* the commit id names (a tag peeled) into commit; 0 or -1 (quietly) */
static int
peel(const struct fetch_git_req *req, const char *repo, const char *id, char *commit,
    struct fetch_result *res)
{
	struct gitcall g;
	struct buf out;
	char *spec = xasprintf("%s^{commit}", id);
	int rc;

	call_init(&g, req);
	call_arg(&g, "rev-parse");
	call_arg(&g, "-q");
	call_arg(&g, "--verify");
	call_arg(&g, spec);
	buf_init(&out);
	rc = call_run(&g, repo, -1, &out, 4096, "git rev-parse", res, 1);
	if (rc == 0 && out.len >= 40 && is_hex40((out.data[40] = '\0', out.data)))
		memcpy(commit, out.data, 41);
	else
		rc = -1;
	buf_free(&out);
	call_free(&g);
	free(spec);
	return rc;
}

static int
shallow_fetch(const struct fetch_git_req *req, const char *repo, const char *what_to,
    struct fetch_result *res)
{
	struct gitcall g;
	char *red = fetch_git_redact(req->url), *what;
	int rc;

	what = xasprintf("git fetch %s %s", red, what_to);
	call_init(&g, req);
	call_arg(&g, "fetch");
	call_arg(&g, "-q");
	call_arg(&g, "--depth");
	call_arg(&g, "1");
	call_arg(&g, "--no-tags");
	call_arg(&g, req->url);
	call_arg(&g, what_to);
	rc = call_run(&g, repo, -1, NULL, 0, what, res, 0);
	call_free(&g);
	free(what);
	free(red);
	return rc;
}

struct blob {
	char oid[41];
	char *path;	/* in the repository */
	char key[1024];
	uint64_t size;
};

/* the folder spec.git.dir, cleaned ("" for the top) */
static int
clean_dir(const char *dir, char *out, size_t outlen)
{
	char tmp[1024];
	size_t n;

	while (dir != NULL && *dir == '/')
		dir++;
	if (dir == NULL || *dir == '\0' || strcmp(dir, ".") == 0) {
		out[0] = '\0';
		return 0;
	}
	snprintf(tmp, sizeof(tmp), "%s", dir);
	n = strlen(tmp);
	while (n > 0 && tmp[n - 1] == '/')
		tmp[--n] = '\0';
	return path_clean_rel(tmp, out, outlen);
}

/* list the blocks at commit under dir: `git ls-tree -r -l -z` */
static int
list_blocks(const struct fetch_git_req *req, const char *repo, const char *commit,
    const char *dir, struct fetch_tree *t, struct blob **blobs, size_t *nblobs,
    struct fetch_result *res)
{
	struct gitcall g;
	struct buf out;
	char *spec, *p, *end;
	size_t cap = 0;
	int rc;

	spec = dir[0] ? xasprintf("%s:%s", commit, dir) : xstrdup(commit);
	call_init(&g, req);
	call_arg(&g, "ls-tree");
	call_arg(&g, "-r");
	call_arg(&g, "-l");
	call_arg(&g, "-z");
	call_arg(&g, spec);
	buf_init(&out);
	rc = call_run(&g, repo, -1, &out, 256 << 20, "git ls-tree", res, 1);
	if (rc < 0)
		fetch_result_error(res, "FetchError", "folder '%s' not found at commit %s",
		    dir, commit);
	p = out.data;
	end = out.data + out.len;
	while (rc == 0 && p != NULL && p < end) {
		/* <mode> SP <type> SP <oid> SP+ <size> TAB <path> NUL */
		char *nul = memchr(p, '\0', (size_t)(end - p)), *tab, *path;
		char mode[16], type[16], oid[64], size[32];
		struct blob *b;
		int krc;

		if (nul == NULL || (tab = strchr(p, '\t')) == NULL || tab > nul)
			break;
		*tab = '\0';
		path = dir[0] ? xasprintf("%s/%s", dir, tab + 1) : xstrdup(tab + 1);
		if (sscanf(p, "%15s %15s %63s %31s", mode, type, oid, size) != 4 ||
		    strcmp(type, "blob") != 0) {
			free(path);	/* submodules (type commit) are not blocks */
			p = nul + 1;
			continue;
		}
		if (*blobs == NULL || *nblobs == cap) {
			cap = cap ? cap * 2 : 64;
			*blobs = xrealloc(*blobs, cap * sizeof(**blobs));
		}
		b = &(*blobs)[*nblobs];
		krc = fetch_key_from_path(path, b->key, sizeof(b->key), res->error,
		    sizeof(res->error));
		if (krc == 1) {
			free(path);
			p = nul + 1;
			continue;
		}
		if (krc < 0) {
			res->reason = "FetchError";
			free(path);
			rc = -1;
			break;
		}
		if (strcmp(mode, "120000") == 0) {
			rc = fetch_result_error(res, "FetchError",
			    "%s: is a symbolic link; links are not followed in git sources", path);
			free(path);
			break;
		}
		snprintf(b->oid, sizeof(b->oid), "%.40s", oid);
		b->size = strtoull(size, NULL, 10);
		b->path = path;
		if (fetch_tree_check_size(t, path, b->size, res) < 0) {
			free(path);
			rc = -1;
			break;
		}
		(*nblobs)++;
		p = nul + 1;
	}
	buf_free(&out);
	call_free(&g);
	free(spec);
	return rc;
}

/* read every listed blob with one `git cat-file --batch` and add it to t */
static int
read_blobs(const struct fetch_git_req *req, const char *repo, struct blob *blobs,
    size_t n, struct fetch_tree *t, struct fetch_result *res)
{
	struct gitcall g;
	struct buf in, out;
	char tmpl[4096];
	size_t want = 4096, off = 0;
	uint64_t total = 0;
	int fd, rc;

	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		total += blobs[i].size;
	if (req->lim.max_tree > 0 && total > req->lim.max_tree)
		return fetch_result_error(res, "TooLarge",
		    "the tree at spec.git.dir passes max_tree_size (%llu bytes)",
		    (unsigned long long)req->lim.max_tree);
	buf_init(&in);
	for (size_t i = 0; i < n; i++) {
		buf_printf(&in, "%s\n", blobs[i].oid);
		want += blobs[i].size + 64;
	}
	snprintf(tmpl, sizeof(tmpl), "%s/decod-batch.XXXXXX", repo);
	if ((fd = mkstemp(tmpl)) < 0) {
		buf_free(&in);
		return fetch_result_error(res, "FetchError", "cannot make a temp file in %s: %s",
		    repo, strerror(errno));
	}
	unlink(tmpl);
	if (write(fd, in.data, in.len) != (ssize_t)in.len || lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		buf_free(&in);
		return fetch_result_error(res, "FetchError", "cannot write %s: %s", tmpl,
		    strerror(errno));
	}
	buf_free(&in);
	call_init(&g, req);
	call_arg(&g, "cat-file");
	call_arg(&g, "--batch");
	buf_init(&out);
	rc = call_run(&g, repo, fd, &out, want, "git cat-file", res, 0);
	close(fd);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		char hdr[160], oid[64], type[16];
		unsigned long long size;
		char *nl = off < out.len ? memchr(out.data + off, '\n', out.len - off) : NULL;

		if (nl == NULL || (size_t)(nl - (out.data + off)) >= sizeof(hdr)) {
			rc = fetch_result_error(res, "FetchError", "%s: git cat-file output is short",
			    blobs[i].path);
			break;
		}
		memcpy(hdr, out.data + off, (size_t)(nl - (out.data + off)));
		hdr[nl - (out.data + off)] = '\0';
		if (sscanf(hdr, "%63s %15s %llu", oid, type, &size) != 3 ||
		    strcmp(oid, blobs[i].oid) != 0 || strcmp(type, "blob") != 0 ||
		    (size_t)(nl + 1 - out.data) + size + 1 > out.len) {
			rc = fetch_result_error(res, "FetchError", "%s: cannot read blob %s (%s)",
			    blobs[i].path, blobs[i].oid, hdr);
			break;
		}
		rc = fetch_tree_add(t, blobs[i].key, blobs[i].path, nl + 1, (size_t)size, res);
		off = (size_t)(nl + 1 - out.data) + size + 1;
	}
	buf_free(&out);
	call_free(&g);
	return rc;
}

int
fetch_git_tree(struct spool *sp, const struct fetch_git_req *req, const char *id,
    struct fetch_result *res)
{
	char commit[41], dir[1024];
	struct blob *blobs = NULL;
	struct fetch_tree *t = NULL;
	size_t nblobs = 0;
	char *repo;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	if (!is_hex40(id))
		return fetch_result_error(res, "FetchError", "'%s' is not a git object id", id);
	if (clean_dir(req->dir, dir, sizeof(dir)) < 0)
		return fetch_result_error(res, "FetchError",
		    "source git: spec.git.dir '%s' is not a clean relative path", req->dir);
	if (mkdir_p(req->cache_root, 0700) < 0)
		return fetch_result_error(res, "FetchError", "cannot make %s: %s",
		    req->cache_root, strerror(errno));
	if ((repo = cache_repo(req, res)) == NULL)
		return -1;
	if (peel(req, repo, id, commit, res) < 0) {
		/* not here yet: fetch exactly that object, or the ref as a fallback */
		if (shallow_fetch(req, repo, id, res) < 0) {
			if (req->ref == NULL || is_hex40(req->ref) ||
			    shallow_fetch(req, repo, req->ref, res) < 0)
				goto out;
			id = "FETCH_HEAD";
		}
		if (peel(req, repo, id, commit, res) < 0) {
			fetch_result_error(res, "FetchError", "commit %s not found after fetch", id);
			goto out;
		}
	}
	t = fetch_tree_new(sp, &req->lim);
	if (list_blocks(req, repo, commit, dir, t, &blobs, &nblobs, res) < 0 ||
	    read_blobs(req, repo, blobs, nblobs, t, res) < 0 ||
	    fetch_tree_finish(t, "git", commit, res) < 0)
		goto out;
	rc = 0;
out:
	for (size_t i = 0; i < nblobs; i++)
		free(blobs[i].path);
	free(blobs);
	fetch_tree_free(t);
	free(repo);
	return rc;
}

int
fetch_git_askpass_main(const char *prompt)
{
	const char *file = getenv(FETCH_GIT_ASKPASS_ENV);
	char *secret, *colon;
	size_t len;

	if (file == NULL || prompt == NULL)
		return 1;
	if ((secret = read_file(file, &len, 65536)) == NULL)
		return 1;
	while (len > 0 && isspace((unsigned char)secret[len - 1]))
		secret[--len] = '\0';
	colon = strchr(secret, ':');
	if (strncasecmp(prompt, "Username", 8) == 0) {
		if (colon != NULL)
			printf("%.*s\n", (int)(colon - secret), secret);
		else
			printf("x-access-token\n");
	} else {
		printf("%s\n", colon != NULL ? colon + 1 : secret);
	}
	fflush(stdout);
	explicit_bzero(secret, len);
	free(secret);
	return 0;
}

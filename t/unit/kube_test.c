/*
 * kube_test - the Kubernetes client without a cluster: kubeconfig and
 * in-cluster configuration (table), kubeconfig size (up to 4 MiB) and
 * plain-number scalars read as strings, paths, and answers from a scripted
 * HTTP server on loopback (Status errors, 429 with Retry-After, 5xx, list
 * pages, a watch stream split anywhere, bookmarks, 410 Gone and the re-list).
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/kube.h"
#include "common/util.h"
#include "t/tap.h"

static char dir[] = "/tmp/kube_test.XXXXXX";

static void
put(const char *name, const char *text)
{
	char *p = xasprintf("%s/%s", dir, name);

	write_file_atomic(p, text, strlen(text), 0600);
	free(p);
}

#define PEM "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

static const char kc_head[] =
    "apiVersion: v1\nkind: Config\n"
    "clusters:\n"
    "- name: a\n  cluster:\n    server: https://10.0.0.1:6443/\n"
    "    certificate-authority-data: %s\n"
    "- name: b\n  cluster: {server: \"http://127.0.0.1:8080\", certificate-authority: ca.pem}\n"
    "- name: c\n  cluster:\n    insecure-skip-tls-verify: true\n    server: https://[::1]:6443\n"
    "- name: noserver\n  cluster: {}\n"
    "users:\n"
    "- name: tok\n  user: {token: s3cr3t}\n"
    "- name: tokfile\n  user: {tokenFile: tok.txt}\n"
    "- name: certdata\n  user:\n    client-certificate-data: %s\n    client-key-data: %s\n"
    "- name: certfile\n  user: {client-certificate: /nonexistent/c.pem, client-key: k.pem}\n"
    "- name: certonly\n  user: {client-certificate-data: %s}\n"
    "- name: plugin\n  user:\n    exec: {command: aws, apiVersion: client.authentication.k8s.io/v1}\n"
    "- name: badb64\n  user: {client-certificate-data: \"!!!\", client-key-data: \"!!!\"}\n"
    "contexts:\n"
    "- name: one\n  context: {cluster: a, user: tok, namespace: sites}\n"
    "- name: two\n  context: {cluster: b, user: tokfile}\n"
    "- name: three\n  context: {cluster: c, user: certdata}\n"
    "- name: four\n  context: {cluster: b, user: certfile}\n"
    "- name: five\n  context: {cluster: a, user: certonly}\n"
    "- name: six\n  context: {cluster: a, user: plugin}\n"
    "- name: seven\n  context: {cluster: zzz, user: tok}\n"
    "- name: eight\n  context: {cluster: noserver, user: tok}\n"
    "- name: nine\n  context: {cluster: a, user: nobody}\n"
    "- name: ten\n  context: {cluster: a, user: badb64}\n"
    "- name: eleven\n  context: {cluster: a}\n"
    "current-context: one\n";

static void
test_kubeconfig(void)
{
	static const struct {
		const char *label, *context;
		const char *server, *ns, *err;	/* err: substring, or NULL for success */
		int token, token_file, ca_data, ca_file, cert, insecure;
	} rows[] = {
		{ "current-context, inline token and CA data", NULL,
		  "https://10.0.0.1:6443", "sites", NULL, 1, 0, 1, 0, 0, 0 },
		{ "token file and CA file relative to the kubeconfig", "two",
		  "http://127.0.0.1:8080", "default", NULL, 0, 1, 0, 1, 0, 0 },
		{ "client certificate as data, insecure, IPv6", "three",
		  "https://[::1]:6443", "default", NULL, 0, 0, 0, 0, 1, 1 },
		{ "a missing certificate file is named", "four", NULL, NULL,
		  "/nonexistent/c.pem", 0, 0, 0, 0, 0, 0 },
		{ "a certificate without its key", "five", NULL, NULL,
		  "needs its key", 0, 0, 0, 0, 0, 0 },
		{ "exec plugins are refused with a reason", "six", NULL, NULL,
		  "not supported", 0, 0, 0, 0, 0, 0 },
		{ "unknown cluster", "seven", NULL, NULL, "cluster \"zzz\" not found", 0, 0, 0, 0, 0, 0 },
		{ "cluster without server", "eight", NULL, NULL, "has no server", 0, 0, 0, 0, 0, 0 },
		{ "unknown user", "nine", NULL, NULL, "user \"nobody\" not found", 0, 0, 0, 0, 0, 0 },
		{ "bad base64", "ten", NULL, NULL, "not base64", 0, 0, 0, 0, 0, 0 },
		{ "no user: anonymous", "eleven", "https://10.0.0.1:6443", "default", NULL,
		  0, 0, 1, 0, 0, 0 },
		{ "unknown context", "nope", NULL, NULL, "context \"nope\" not found", 0, 0, 0, 0, 0, 0 },
	};
	char *b64 = base64_encode(PEM, strlen(PEM), 0), *text, *path;
	struct kube_config c;
	char err[512];

	text = xasprintf(kc_head, b64, b64, b64, b64);
	put("kubeconfig", text);
	put("ca.pem", PEM);
	put("tok.txt", "abc\n");
	put("k.pem", "key");
	path = xasprintf("%s/kubeconfig", dir);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int rc;

		err[0] = '\0';
		rc = kube_config_load(&c, path, rows[i].context, err, sizeof(err));
		if (rows[i].err != NULL) {
			ok(rc == -1 && strstr(err, rows[i].err) != NULL, "%s: %s", rows[i].label, err);
			ok(c.server == NULL, "%s: nothing kept", rows[i].label);
			continue;
		}
		if (!ok(rc == 0, "%s", rows[i].label)) {
			diag("%s", err);
			continue;
		}
		is_str(c.server, rows[i].server, "%s: server", rows[i].label);
		is_str(c.namespace, rows[i].ns, "%s: namespace", rows[i].label);
		is_int(c.token != NULL, rows[i].token, "%s: token", rows[i].label);
		is_int(c.token_file != NULL, rows[i].token_file, "%s: token file", rows[i].label);
		is_int(c.ca_data != NULL, rows[i].ca_data, "%s: CA data", rows[i].label);
		is_int(c.ca_file != NULL, rows[i].ca_file, "%s: CA file", rows[i].label);
		is_int(c.cert_data != NULL && c.key_data != NULL, rows[i].cert, "%s: client cert", rows[i].label);
		is_int(c.insecure, rows[i].insecure, "%s: insecure", rows[i].label);
		if (rows[i].ca_data)
			ok(c.ca_len == strlen(PEM) && memcmp(c.ca_data, PEM, c.ca_len) == 0,
			    "%s: CA data decoded", rows[i].label);
		if (rows[i].token)
			is_str(c.token, "s3cr3t", "%s: token value", rows[i].label);
		if (rows[i].token_file) {
			char *want = xasprintf("%s/tok.txt", dir);

			is_str(c.token_file, want, "%s: token file path", rows[i].label);
			free(want);
		}
		kube_config_free(&c);
	}
	/* JSON is YAML too */
	{
		const char *js = "{\"current-context\":\"x\",\"contexts\":[{\"name\":\"x\","
		    "\"context\":{\"cluster\":\"x\"}}],\"clusters\":[{\"name\":\"x\",\"cluster\":"
		    "{\"server\":\"https://h:1\"}}]}";

		ok(kube_config_parse(&c, js, strlen(js), NULL, NULL, err, sizeof(err)) == 0 &&
		    strcmp(c.server, "https://h:1") == 0, "a JSON kubeconfig");
	}
	kube_config_free(&c);
	ok(kube_config_parse(&c, "- a\n- b\n", 8, NULL, NULL, err, sizeof(err)) == -1,
	    "a list is not a kubeconfig");
	ok(kube_config_parse(&c, "a: [\n", 5, NULL, NULL, err, sizeof(err)) == -1 &&
	    strstr(err, "line") != NULL, "YAML errors name the line: %s", err);
	ok(kube_config_parse(&c, "current-context: a\n---\ncurrent-context: b\n", 42,
	    NULL, NULL, err, sizeof(err)) == -1 && strstr(err, "2 YAML documents") != NULL,
	    "two YAML documents are refused: %s", err);
	ok(kube_config_parse(&c, "# nothing\n", 10, NULL, NULL, err, sizeof(err)) == -1 &&
	    strstr(err, "0 YAML documents") != NULL, "an empty kubeconfig is refused: %s", err);
	free(path);
	free(text);
	free(b64);
}

/* big_kubeconfig - one cluster whose certificate-authority-data is n bytes decoded */
static char *
big_kubeconfig(size_t n)
{
	char *raw = xmalloc(n), *b64, *text;

	for (size_t i = 0; i < n; i++)
		raw[i] = (char)(i * 131 + 7);
	b64 = base64_encode(raw, n, 0);
	text = xasprintf("current-context: x\ncontexts:\n- name: x\n  context: {cluster: x}\n"
	    "clusters:\n- name: x\n  cluster:\n    server: https://h:1\n"
	    "    certificate-authority-data: %s\n", b64);
	free(raw);
	free(b64);
	return text;
}

/*
 * test_kubeconfig_size - a kubeconfig may be 4 MiB (inline certificates),
 * not the 1 MiB of a decoctl document; over 4 MiB it is refused, saying so
 */
static void
test_kubeconfig_size(void)
{
	struct kube_config c;
	char err[512], *text, *path = xasprintf("%s/big", dir);
	struct buf b;

	text = big_kubeconfig(1536u << 10);	/* 2 MiB of base64 */
	ok(strlen(text) > (2u << 20), "a %zu-byte kubeconfig", strlen(text));
	err[0] = '\0';
	ok(kube_config_parse(&c, text, strlen(text), NULL, NULL, err, sizeof(err)) == 0,
	    "over 1 MiB but under 4 MiB parses: %s", err);
	is_int(c.ca_len, 1536u << 10, "its 1.5 MiB CA is all there");
	kube_config_free(&c);
	put("big", text);
	ok(kube_config_load(&c, path, NULL, err, sizeof(err)) == 0, "and loads from a file: %s", err);
	kube_config_free(&c);
	free(text);

	text = big_kubeconfig(3300u << 10);	/* 4.3 MiB of base64 */
	ok(kube_config_parse(&c, text, strlen(text), NULL, NULL, err, sizeof(err)) == -1 &&
	    strstr(err, "larger than the 4 MiB a kubeconfig may be") != NULL,
	    "over 4 MiB is refused: %s", err);
	ok(c.server == NULL, "nothing kept");
	put("big", text);
	ok(kube_config_load(&c, path, NULL, err, sizeof(err)) == -1 &&
	    strstr(err, "larger than the 4 MiB a kubeconfig may be") != NULL &&
	    strstr(err, path) != NULL, "a file over 4 MiB is refused: %s", err);
	free(text);

	/* under 4 MiB as text, over it once aliases are expanded */
	buf_init(&b);
	buf_adds(&b, "a: &a \"");
	for (size_t i = 0; i < (1u << 20); i++)
		buf_addc(&b, 'x');
	buf_adds(&b, "\"\nb: [*a, *a, *a, *a]\n");
	ok(kube_config_parse(&c, b.data, b.len, NULL, NULL, err, sizeof(err)) == -1 &&
	    strstr(err, "larger than 4 MiB once aliases are expanded") != NULL,
	    "aliases past 4 MiB are refused: %s", err);
	buf_free(&b);
	free(path);
}

/*
 * test_kubeconfig_plain_numbers - every field read is a string: a plain
 * scalar that YAML would read as a number is read as the text written
 */
static void
test_kubeconfig_plain_numbers(void)
{
	static const char text[] =
	    "current-context: 2024\n"
	    "contexts:\n- name: 2024\n  context: {cluster: 1, user: 0123, namespace: 123}\n"
	    "- name: hex\n  context: {cluster: 1, user: 0123, namespace: 0x1F}\n"
	    "- name: float\n  context: {cluster: 1, namespace: 1e3}\n"
	    "clusters:\n- name: 1\n  cluster: {server: \"https://h:1\", insecure-skip-tls-verify: True}\n"
	    "users:\n- name: 0123\n  user: {token: 00123456789}\n";
	struct kube_config c;
	char err[512];

	err[0] = '\0';
	if (!ok(kube_config_parse(&c, text, strlen(text), NULL, NULL, err, sizeof(err)) == 0,
	    "numeric names, namespace and token: %s", err))
		return;
	is_str(c.server, "https://h:1", "cluster named 1 found for context 2024");
	is_str(c.namespace, "123", "namespace: 123 is \"123\"");
	is_str(c.token, "00123456789", "a token of digits keeps its leading zeros");
	is_int(c.insecure, 1, "insecure-skip-tls-verify: True is still a boolean");
	kube_config_free(&c);
	ok(kube_config_parse(&c, text, strlen(text), NULL, "hex", err, sizeof(err)) == 0 &&
	    strcmp(c.namespace, "0x1F") == 0, "namespace: 0x1F is \"0x1F\", not 31");
	kube_config_free(&c);
	ok(kube_config_parse(&c, text, strlen(text), NULL, "float", err, sizeof(err)) == 0 &&
	    strcmp(c.namespace, "1e3") == 0, "namespace: 1e3 is \"1e3\"");
	kube_config_free(&c);
}

static void
test_in_cluster(void)
{
	struct kube_config c;
	char err[512], *sa = xasprintf("%s/sa", dir);

	mkdir_p(sa, 0700);
	unsetenv("KUBERNETES_SERVICE_HOST");
	ok(kube_config_in_cluster(&c, sa, err, sizeof(err)) == -1 &&
	    strstr(err, "KUBERNETES_SERVICE_HOST") != NULL, "outside a pod: said so");
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	ok(kube_config_in_cluster(&c, sa, err, sizeof(err)) == -1 &&
	    strstr(err, "token") != NULL, "no token file: named");
	put("sa/token", "tkn");
	put("sa/ca.crt", PEM);
	put("sa/namespace", "decod-system\n");
	ok(kube_config_in_cluster(&c, sa, err, sizeof(err)) == 0, "in a pod");
	is_str(c.server, "https://10.96.0.1:443", "server from the environment");
	is_str(c.namespace, "decod-system", "namespace file, newline dropped");
	ok(c.token == NULL && c.token_file != NULL, "token read from its file (rotation)");
	ok(c.ca_file != NULL && strstr(c.ca_file, "ca.crt") != NULL, "CA bundle");
	kube_config_free(&c);
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	ok(kube_config_in_cluster(&c, sa, err, sizeof(err)) == 0 &&
	    strcmp(c.server, "https://[fd00::1]:443") == 0, "IPv6 service host bracketed");
	kube_config_free(&c);
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	free(sa);
}

static void
test_paths(void)
{
	static const struct {
		const struct kube_kind *kd;
		const char *ns, *name, *sub, *query, *want;
	} rows[] = {
		{ &kube_configmaps, "sites-loja", "decofile-loja", NULL, NULL,
		  "/api/v1/namespaces/sites-loja/configmaps/decofile-loja" },
		{ &kube_pods, NULL, NULL, NULL, "watch=1",
		  "/api/v1/pods?watch=1" },
		{ &kube_namespaces, "ignored", "sites-a", NULL, NULL,
		  "/api/v1/namespaces/sites-a" },
		{ &kube_decofiles, "ns", "loja", "status", NULL,
		  "/apis/deco.sites/v1alpha1/namespaces/ns/decofiles/loja/status" },
		{ &kube_leases, "decod", "decod-leader", NULL, NULL,
		  "/apis/coordination.k8s.io/v1/namespaces/decod/leases/decod-leader" },
		{ &kube_decofiletemplates, "", NULL, NULL, "limit=500",
		  "/apis/deco.sites/v1alpha1/decofiletemplates?limit=500" },
	};
	char *p;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		p = kube_path(rows[i].kd, rows[i].ns, rows[i].name, rows[i].sub, rows[i].query);
		is_str(p, rows[i].want, "path %s", rows[i].want);
		free(p);
	}
	p = kube_escape("app.deco/deploymentId=loja, x in (a b)");
	is_str(p, "app.deco%2FdeploymentId%3Dloja%2C%20x%20in%20%28a%20b%29", "query escaping");
	free(p);
	p = kube_apply_path(&kube_decofiles, "ns", "loja", "status", "decod-publisher", 1);
	is_str(p, "/apis/deco.sites/v1alpha1/namespaces/ns/decofiles/loja/status"
	    "?fieldManager=decod-publisher&force=true", "apply path with force");
	free(p);
	p = kube_apply_path(&kube_configmaps, "ns", "cm", NULL, "m", 0);
	is_str(p, "/api/v1/namespaces/ns/configmaps/cm?fieldManager=m", "apply path without force");
	free(p);
	{	/* the Lease's one identity rule: POD_NAME, else HOST:PID */
		char id[300], host[256], want[300];
		const char *old = getenv("POD_NAME");
		char *keep = old != NULL ? xstrdup(old) : NULL;

		setenv("POD_NAME", "decod-7d9f-abcde", 1);
		kube_lease_identity(id, sizeof(id));
		is_str(id, "decod-7d9f-abcde", "lease identity: the pod's name when POD_NAME is set");
		unsetenv("POD_NAME");
		kube_lease_identity(id, sizeof(id));
		gethostname(host, sizeof(host));
		host[sizeof(host) - 1] = '\0';
		snprintf(want, sizeof(want), "%s:%ld", host, (long)getpid());
		is_str(id, want, "lease identity: HOST:PID without POD_NAME");
		if (keep != NULL)
			setenv("POD_NAME", keep, 1);
		free(keep);
	}
}

/* ---- a scripted HTTP/1.1 server on loopback ---- */

struct script {
	const char *match;	/* request line prefix, e.g. "GET /api/v1/configmaps?limit" */
	const char *resp;	/* whole answer; "\f" splits it into separate writes */
	int times;		/* answers left (then the next row matching is used) */
};

static struct script *scr;
static size_t nscr;
static int lfd, port;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int seen_429, seen_500;
static char last_auth[256];
static int seen_continue;	/* a list page with continue= was asked for */
static char list_accept[256];	/* the Accept header of the last list */

/* script_set - the server answers by s[0..n) from now on (copied) */
static void
script_set(const struct script *s, size_t n)
{
	pthread_mutex_lock(&mu);
	free(scr);
	scr = xmalloc(n * sizeof(*s));
	memcpy(scr, s, n * sizeof(*s));
	nscr = n;
	pthread_mutex_unlock(&mu);
}

static void
serve_one(int fd)
{
	char req[65536];
	size_t n = 0;

	for (;;) {
		ssize_t r;
		char *end;

		if (n >= sizeof(req) - 1)
			break;
		if ((r = read(fd, req + n, sizeof(req) - 1 - n)) <= 0)
			break;
		n += (size_t)r;
		req[n] = '\0';
		if ((end = strstr(req, "\r\n\r\n")) != NULL) {
			const char *cl = strcasestr(req, "Content-Length:");
			size_t want = cl != NULL ? strtoul(cl + 15, NULL, 10) : 0;
			size_t hl = (size_t)(end + 4 - req);
			const char *a;
			struct script *s = NULL;
			char *resp = NULL;	/* a copy: the script may be freed meanwhile */

			while (n < hl + want && (r = read(fd, req + n, sizeof(req) - 1 - n)) > 0)
				n += (size_t)r;
			if (getenv("KUBE_TEST_DEBUG") != NULL)
				fprintf(stderr, "# %.*s\n", (int)strcspn(req, "\r"), req);
			pthread_mutex_lock(&mu);
			if (strncmp(req, "GET ", 4) == 0 && strstr(req, "continue=") != NULL &&
			    strstr(req, "continue=") < strstr(req, " HTTP/"))
				seen_continue++;
			if (strncmp(req, "GET ", 4) == 0 && strstr(req, "limit=") != NULL &&
			    (a = strcasestr(req, "Accept: ")) != NULL)
				snprintf(list_accept, sizeof(list_accept), "%.*s",
				    (int)strcspn(a + 8, "\r"), a + 8);
			if ((a = strcasestr(req, "Authorization: ")) != NULL)
				snprintf(last_auth, sizeof(last_auth), "%.*s",
				    (int)strcspn(a + 15, "\r"), a + 15);
			for (size_t i = 0; i < nscr; i++)
				if (scr[i].times > 0 && strncmp(req, scr[i].match, strlen(scr[i].match)) == 0) {
					s = &scr[i];
					s->times--;
					break;
				}
			if (s != NULL && strstr(s->resp, " 429 ") != NULL)
				seen_429++;
			if (s != NULL && strstr(s->resp, " 500 ") != NULL)
				seen_500++;
			if (s != NULL)
				resp = xstrdup(s->resp);
			pthread_mutex_unlock(&mu);
			if (resp == NULL) {
				const char *nf = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";

				(void)!write(fd, nf, strlen(nf));
			} else {
				const char *p = resp;
				int close_after = strstr(resp, "Connection: close") != NULL;

				while (*p != '\0') {
					size_t m = strcspn(p, "\f");

					(void)!write(fd, p, m);
					p += m;
					if (*p == '\f') {
						p++;
						usleep(20000);
					}
				}
				free(resp);
				if (close_after)
					break;
			}
			n = 0;
		}
	}
	close(fd);
}

static void *
server(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0)
			return NULL;
		serve_one(fd);
	}
}

static void
server_start(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	pthread_t th;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	bind(lfd, (struct sockaddr *)&a, sizeof(a));
	listen(lfd, 16);
	getsockname(lfd, (struct sockaddr *)&a, &al);
	port = ntohs(a.sin_port);
	pthread_create(&th, NULL, server, NULL);
	pthread_detach(th);
}

#define JSONH "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n%s\r\n%s"

static char *
answer(const char *status, const char *extra, const char *body)
{
	return xasprintf(JSONH, status, strlen(body), extra, body);
}

static char *
chunk(const char *s)
{
	return xasprintf("%zx\r\n%s\r\n", strlen(s), s);
}

struct seen {
	char log[8192];
	int synced;
	int next_first;	/* page 2 asked for before page 1 was delivered */
};

static void
on_ev(void *arg, enum kube_event ev, yajl_val obj, yajl_val old)
{
	static const char *names[] = { "ADDED", "MODIFIED", "DELETED", "SYNCED" };
	struct seen *s = arg;
	size_t n = strlen(s->log);

	(void)old;
	if (ev == KUBE_SYNCED)
		s->synced++;
	/*
	 * the first page's first object: the next page must be on the wire
	 * already (the loop does not run while this callback does)
	 */
	if (ev == KUBE_ADDED && s->synced == 0 && strcmp(kube_obj_name(obj), "a") == 0) {
		int64_t t0 = now_ms();
		int asked = 0;

		while (!asked && now_ms() - t0 < 2000) {
			pthread_mutex_lock(&mu);
			asked = seen_continue > 0;
			pthread_mutex_unlock(&mu);
			if (!asked)
				usleep(5000);
		}
		s->next_first = asked;
	}
	snprintf(s->log + n, sizeof(s->log) - n, "%s%s%s;", names[ev],
	    obj != NULL ? " " : "", obj != NULL ? kube_obj_name(obj) : "");
}

static void
test_answers(void)
{
	struct kube_config c = { 0 };
	struct kube *k;
	struct kube_resp *r;
	char err[512], url[64];
	char *a409, *a429, *aok, *a500, *l1, *l2, *w1, *w2, *l3, *w3;
	struct seen seen = { .log = "", .synced = 0 };
	struct kube_informer *inf;
	yajl_val items;
	char rv[64];
	int64_t t0;

	server_start();
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	c.server = url;
	c.token = "tok-123";
	k = kube_new(&c, 5000, err, sizeof(err));
	if (!ok(k != NULL, "client for the scripted server"))
		return;

	a409 = answer("409 Conflict", "", "{\"kind\":\"Status\",\"status\":\"Failure\","
	    "\"message\":\"Apply failed with 1 conflict: conflict with \\\"kubectl\\\": .data.x\","
	    "\"reason\":\"Conflict\",\"code\":409}");
	a429 = answer("429 Too Many Requests", "Retry-After: 1\r\n", "{\"kind\":\"Status\",\"code\":429}");
	a500 = answer("500 Internal Server Error", "", "{\"kind\":\"Status\",\"code\":500}");
	aok = answer("200 OK", "", "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\"}}");
	{
		struct script s[] = {
			{ "PATCH /api/v1/namespaces/ns/configmaps/conflict", a409, 1 },
			{ "GET /api/v1/namespaces/ns/configmaps/busy", a429, 1 },
			{ "GET /api/v1/namespaces/ns/configmaps/busy", aok, 1 },
			{ "GET /api/v1/namespaces/ns/configmaps/flaky", a500, 2 },
			{ "GET /api/v1/namespaces/ns/configmaps/flaky", aok, 1 },
			{ "POST /api/v1/namespaces/ns/configmaps", a500, 5 },
		};

		script_set(s, sizeof(s) / sizeof(s[0]));
	}
	r = kube_do(k, "PATCH", "/api/v1/namespaces/ns/configmaps/conflict?fieldManager=m",
	    KUBE_APPLY_CTYPE, "{}", 2, 0);
	is_int(r->status, 409, "409 comes back as it is");
	is_str(r->reason, "Conflict", "the Status reason");
	ok(strstr(r->err, ".data.x") != NULL, "the message names the conflicting field");
	is_int(r->attempts, 1, "a conflict is not retried");
	kube_resp_free(r);
	is_str(last_auth, "Bearer tok-123", "the bearer token is sent");

	t0 = now_ms();
	r = kube_do(k, "GET", "/api/v1/namespaces/ns/configmaps/busy", NULL, NULL, 0, 0);
	ok(kube_ok(r) && r->attempts == 2, "429 retried: %ld after %d attempts", r->status, r->attempts);
	ok(now_ms() - t0 >= 950, "Retry-After: 1 honoured (%lld ms)", (long long)(now_ms() - t0));
	ok(r->json != NULL && strcmp(kube_obj_name(r->json), "x") == 0, "the answer parsed");
	kube_resp_free(r);

	r = kube_do(k, "GET", "/api/v1/namespaces/ns/configmaps/flaky", NULL, NULL, 0, 0);
	ok(kube_ok(r) && r->attempts == 3, "500 twice, then 200: %d attempts", r->attempts);
	kube_resp_free(r);

	r = kube_do(k, "POST", "/api/v1/namespaces/ns/configmaps", NULL, "{}", 2, 0);
	ok(r->status == 500 && r->attempts == 1, "a POST is not retried on 500");
	kube_resp_free(r);

	r = kube_do(k, "GET", "/api/v1/namespaces/ns/configmaps/nothing", NULL, NULL, 0, 0);
	is_int(r->status, 404, "404 as it is");
	kube_resp_free(r);

	/* a deadline: a 429 whose Retry-After is past it ends the call */
	{
		struct script s2 = { "GET /api/v1/namespaces/ns/configmaps/slow",
			answer("429 Too Many Requests", "Retry-After: 30\r\n", "{}"), 1 };

		pthread_mutex_lock(&mu);
		scr[5] = s2;
		pthread_mutex_unlock(&mu);
		t0 = now_ms();
		r = kube_do(k, "GET", "/api/v1/namespaces/ns/configmaps/slow", NULL, NULL, 0, 300);
		ok(r->status == 429 && now_ms() - t0 < 1000,
		    "a Retry-After beyond the deadline is not waited for");
		kube_resp_free(r);
		free((char *)s2.resp);
	}

	/* pages, a watch split anywhere, a bookmark, 410, the re-list */
	l1 = answer("200 OK", "", "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"10\","
	    "\"continue\":\"tok/1\"},\"items\":[{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\","
	    "\"resourceVersion\":\"5\"}}]}");
	l2 = answer("200 OK", "", "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"10\"},"
	    "\"items\":[{\"metadata\":{\"namespace\":\"ns\",\"name\":\"b\",\"resourceVersion\":\"6\"}}]}");
	{
		char *c1 = chunk("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"namespace\":\"ns\",\"name\":\"c\",\"resourceVersion\":\"11\"}}}\n{\"type\":\"MOD");
		char *c2 = chunk("IFIED\",\"object\":{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\",\"resourceVersion\":\"12\"}}}\n");
		char *c3 = chunk("{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"13\"}}}\n"
		    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"namespace\":\"ns\",\"name\":\"b\",\"resourceVersion\":\"14\"}}}\n");
		char *c4 = chunk("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}}\n");

		w1 = xasprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n%s\f%s\f%s\f%s\f", c1, c2, c3, c4);
		free(c1);
		free(c2);
		free(c3);
		free(c4);
	}
	l3 = answer("200 OK", "", "{\"metadata\":{\"resourceVersion\":\"20\"},\"items\":["
	    "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\",\"resourceVersion\":\"12\"}},"
	    "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"d\",\"resourceVersion\":\"19\"}}]}");
	w2 = xasprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n");
	w3 = answer("200 OK", "", "{}");
	/*
	 * a program still starting (its loop not running): kube_progress
	 * asks for every next page and delivers none; the loop delivers them
	 */
	{
		struct script s[] = {
			{ "GET /api/v1/namespaces/ns/configmaps?limit=500&continue=tok%2F1", l2, 1 },
			{ "GET /api/v1/namespaces/ns/configmaps?limit=500 ", l1, 1 },
			{ "GET /api/v1/namespaces/ns/configmaps?watch=1", w2, 1 },
		};
		struct seen early = { .log = "", .synced = 1 };	/* no next_first probe */
		int left = 1;

		script_set(s, sizeof(s) / sizeof(s[0]));
		inf = kube_informer_new(k, &kube_configmaps, "ns", NULL, on_ev, &early);
		t0 = now_ms();
		while (left > 0 && now_ms() - t0 < 5000) {
			usleep(2000);
			kube_progress(k);
			pthread_mutex_lock(&mu);
			left = scr[0].times;
			pthread_mutex_unlock(&mu);
		}
		ok(left == 0 && early.log[0] == '\0', "start-up: both pages fetched by "
		    "kube_progress, nothing delivered (%s)", early.log);
		t0 = now_ms();
		while (early.synced < 2 && now_ms() - t0 < 5000)
			kube_run(k, 50, NULL);
		is_str(early.log, "ADDED a;ADDED b;SYNCED;", "... the loop delivers them in order");
		kube_informer_free(inf);
	}

	{
		struct script s[] = {
			{ "GET /api/v1/namespaces/ns/configmaps?limit=500&continue=tok%2F1", l2, 1 },
			{ "GET /api/v1/namespaces/ns/configmaps?limit=500 ", l1, 1 },
			{ "GET /api/v1/namespaces/ns/configmaps?watch=1", w1, 1 },
			{ "GET /api/v1/namespaces/ns/configmaps?limit=500 ", l3, 1 },
			{ "GET /api/v1/namespaces/ns/configmaps?watch=1", w2, 1 },
			{ "GET /x", w3, 0 },
		};

		script_set(s, sizeof(s) / sizeof(s[0]));
	}
	inf = kube_informer_new(k, &kube_configmaps, "ns", NULL, on_ev, &seen);
	t0 = now_ms();
	while (seen.synced < 2 && now_ms() - t0 < 5000)
		kube_run(k, 50, NULL);
	is_str(seen.log, "ADDED a;ADDED b;SYNCED;ADDED c;MODIFIED a;DELETED b;"
	    "ADDED d;DELETED c;SYNCED;", "list pages, watch events split across chunks, "
	    "410 and a re-list that reports what changed meanwhile");
	ok(seen.next_first, "a page's objects are delivered once the next page is asked for");
	ok(kube_informer_get(inf, "ns", "a") != NULL && kube_informer_get(inf, "ns", "d") != NULL &&
	    kube_informer_get(inf, "ns", "c") == NULL && kube_informer_count(inf) == 2,
	    "the cache holds what the server holds");
	is_str(kube_informer_rv(inf), "20", "resourceVersion of the re-list");
	{
		struct kube_informer_stats st;

		kube_informer_get_stats(inf, &st);
		is_int(st.gone, 1, "one 410 seen");
		is_int(st.bookmarks, 1, "one bookmark seen");
		is_int(st.lists, 2, "two complete lists");
	}
	kube_informer_free(inf);

	/* kube_list_all over pages */
	pthread_mutex_lock(&mu);
	scr[0].times = 1;
	scr[1].times = 1;
	scr[3].times = 0;
	pthread_mutex_unlock(&mu);
	ok(kube_list_all(k, &kube_configmaps, "ns", NULL, 0, &items, rv, sizeof(rv), err,
	    sizeof(err)) == 0 && items->u.array.len == 2 &&
	    strcmp(kube_obj_name(items->u.array.values[1]), "b") == 0, "list_all follows continue");
	if (items != NULL)
		yajl_tree_free(items);
	ok(strcmp(list_accept, "application/json") == 0, "a list asks for JSON (%s)", list_accept);

	/* metadata only: the list and watch ask for PartialObjectMetadata */
	{
		struct seen ms = { .log = "", .synced = 0 };
		char *lm = answer("200 OK", "", "{\"kind\":\"PartialObjectMetadataList\","
		    "\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":{\"resourceVersion\":\"30\"},"
		    "\"items\":[{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\","
		    "\"metadata\":{\"namespace\":\"ns\",\"name\":\"m\",\"uid\":\"u-1\","
		    "\"resourceVersion\":\"29\"}}]}");
		struct script s[] = {
			{ "GET /apis/deco.sites/v1alpha1/decofiles?limit=500 ", lm, 1 },
			{ "GET /apis/deco.sites/v1alpha1/decofiles?watch=1", w2, 1 },
		};
		struct kube_informer *mi;
		yajl_val o;

		script_set(s, sizeof(s) / sizeof(s[0]));
		mi = kube_informer_new_meta(k, &kube_decofiles, NULL, NULL, on_ev, &ms);
		t0 = now_ms();
		while (ms.synced < 1 && now_ms() - t0 < 5000)
			kube_run(k, 50, NULL);
		ok(strstr(list_accept, "as=PartialObjectMetadataList;v=v1;g=meta.k8s.io") != NULL,
		    "a metadata informer's list asks for PartialObjectMetadataList (%s)", list_accept);
		o = kube_informer_get(mi, "ns", "m");
		ok(o != NULL && strcmp(kube_obj_uid(o), "u-1") == 0, "... and caches what it got");
		kube_informer_free(mi);
		free(lm);
	}
	kube_free(k);
	free(a409);
	free(a429);
	free(a500);
	free(aok);
	free(l1);
	free(l2);
	free(l3);
	free(w1);
	free(w2);
	free(w3);
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	if (mkdtemp(dir) == NULL)
		return 1;
	test_kubeconfig();
	test_kubeconfig_size();
	test_kubeconfig_plain_numbers();
	test_in_cluster();
	test_paths();
	test_answers();
	rm_rf(dir);
	return done_testing();
}

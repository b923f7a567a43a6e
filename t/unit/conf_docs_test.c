/*
 * conf_docs_test - decod.conf(5) and etc/decod.conf.sample state the
 * settings table's defaults: for every setting the man page's "(type;
 * default X)" line and the sample's "#name = X" line give the default
 * common/conf_table.c holds (a folder under the build's prefix is compared by its
 * last two components: the page speaks of a packaged install,
 * /var/lib/decod).  A setting without a default in the table (NULL or "")
 * is unset or computed at run time (the addresses, the identity, the S3
 * host): the page must say so or describe it, and the sample may show an
 * example value.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/util.h"
#include "t/tap.h"

/* unroff - text of a man page fragment without its font and char escapes */
static void
unroff(const char *in, size_t n, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 1 < outlen; ) {
		if (in[i] == '\\' && i + 1 < n) {
			if (in[i + 1] == 'f' && i + 2 < n) {
				i += 3;		/* \fB \fR \fI */
			} else if (in[i + 1] == '(' && i + 3 < n) {
				out[o++] = '-';	/* \(en, the only one used in ranges */
				i += 4;
			} else {
				out[o++] = in[i + 1];	/* \- \. */
				i += 2;
			}
		} else if (in[i] == '\n') {
			out[o++] = ' ';
			i++;
		} else {
			out[o++] = in[i++];
		}
	}
	out[o] = '\0';
}

/*
 * man_default - the default the man page gives name: 1 found (in out), 0
 * documented without one ("no default", "unset" or none said), -1 not
 * documented
 */
static int
man_default(const char *man, const char *name, char *out, size_t outlen)
{
	char head[128], text[1024], *d, *e;
	const char *p, *open, *close;

	snprintf(head, sizeof(head), "\n.TP\n.B %s\n", name);
	if ((p = strstr(man, head)) == NULL)
		return -1;
	p += strlen(head);
	if (*p != '(' || (close = strchr(p, ')')) == NULL)
		return -1;
	open = p + 1;
	unroff(open, (size_t)(close - open), text, sizeof(text));
	if ((d = strstr(text, "default ")) == NULL || strstr(text, "no default") != NULL ||
	    strstr(text, "unset") != NULL)
		return 0;
	d += strlen("default ");
	if ((e = strchr(d, ';')) != NULL)
		*e = '\0';
	snprintf(out, outlen, "%s", d);
	return 1;
}

/* sample_default - the value of the sample's "#name = value" line; -1 none */
static int
sample_default(const char *sample, const char *name, char *out, size_t outlen)
{
	char head[128];
	const char *p, *e;

	snprintf(head, sizeof(head), "\n#%s =", name);
	if ((p = strstr(sample, head)) == NULL)
		return -1;
	p += strlen(head);
	while (*p == ' ')
		p++;
	e = strchr(p, '\n');
	snprintf(out, outlen, "%.*s", (int)(e != NULL ? e - p : (ptrdiff_t)strlen(p)), p);
	return 0;
}

/* last2 - the last two components of a path ("lib/decod") */
static const char *
last2(const char *p)
{
	const char *s = strrchr(p, '/');

	while (s != NULL && s > p && *--s != '/')
		;
	return s != NULL ? s : p;
}

/* same - the table's default and a documented one agree */
static int
same(const char *def, const char *doc)
{
	if (strcmp(def, doc) == 0)
		return 1;
	/*
	 * a configure-time folder: this build's /usr/local/var/lib/decod is a
	 * package's /var/lib/decod, /usr/local/libexec/decod its /usr/libexec/decod
	 */
	return strncmp(def, DECOD_PREFIX "/", strlen(DECOD_PREFIX) + 1) == 0 &&
	    doc[0] == '/' && strcmp(last2(def), last2(doc)) == 0;
}

int
main(void)
{
	const char *top = getenv("top_srcdir");
	char path[4096], doc[1024];
	char *man, *sample;
	int n = 0;

	if (top == NULL)
		top = "..";
	snprintf(path, sizeof(path), "%s/doc/decod.conf.5", top);
	man = read_file(path, NULL, 1 << 20);
	snprintf(path, sizeof(path), "%s/etc/decod.conf.sample", top);
	sample = read_file(path, NULL, 1 << 20);
	if (man == NULL || sample == NULL) {
		printf("Bail out! cannot read %s\n", path);
		return 1;
	}
	for (const struct conf_setting *s = conf_settings(); s->name != NULL; s++) {
		int m = man_default(man, s->name, doc, sizeof(doc));

		n++;
		if (s->def == NULL || s->def[0] == '\0') {
			ok(m >= 0, "%s: in decod.conf(5) (no default in the table)", s->name);
		} else {
			ok(m == 1 && same(s->def, doc), "%s: decod.conf(5) says default %s",
			    s->name, s->def);
			if (m != 1 || !same(s->def, doc))
				diag("the page says: %s", m == 1 ? doc : "no default");
		}
		if (sample_default(sample, s->name, doc, sizeof(doc)) < 0) {
			ok(0, "%s: in etc/decod.conf.sample", s->name);
		} else if (s->def == NULL || s->def[0] == '\0') {
			ok(1, "%s: in etc/decod.conf.sample (no default in the table)", s->name);
		} else {
			ok(same(s->def, doc), "%s: etc/decod.conf.sample says #%s = %s", s->name,
			    s->name, s->def);
			if (!same(s->def, doc))
				diag("the sample says: %s", doc);
		}
	}
	ok(n > 50, "the table has its settings (%d)", n);
	free(man);
	free(sample);
	return done_testing();
}

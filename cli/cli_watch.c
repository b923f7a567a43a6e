/*
 * cli_watch - get -w and status -w, as kubectl's: the table, then one line
 * per change.  A watch on everything under the store's prefix starts
 * before the first listing (no change can slip between the two); each
 * event lists again, and a row is printed when it differs from every row
 * of the listing before (ages aside), in the widths printed so far.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/store.h"
#include "common/store_keys.h"

/* what the watch printed so far (one watch per process) */
static struct {
	int header_done;
	size_t ncols;
	size_t *widths;
	char **seen;		/* the last listing's row keys, sorted */
	size_t nseen;
} shown;

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void
on_event(void *arg, const struct store_event *ev)
{
	(void)ev;
	*(int *)arg = 1;
}

/* is_age - a column whose value moves with the clock alone */
static int
is_age(const char *header)
{
	return strcmp(header, "AGE") == 0 || strcmp(header, "PUBLISHED") == 0;
}

/* row_key - the row's cells but its ages, as one string (caller frees) */
static char *
row_key(const struct table *t, size_t r)
{
	struct buf b;

	buf_init(&b);
	buf_adds(&b, "");
	for (size_t i = 0; i < t->ncols; i++)
		if (!is_age(t->cells[i]))
			buf_printf(&b, "%s\x1f", t->cells[r * t->ncols + i]);
	return buf_steal(&b, NULL);
}

static int
key_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
print_row(const struct table *t, size_t r)
{
	for (size_t i = 0; i < t->ncols; i++) {
		const char *s = t->cells[r * t->ncols + i];

		if (i + 1 == t->ncols)
			printf("%s\n", s);
		else
			printf("%-*s   ", (int)shown.widths[i], s);
	}
}

void
cli_watch_table(struct cli *c, struct table *t)
{
	char **keys = xcalloc(t->nrows, sizeof(char *));
	size_t nkeys = 0;

	(void)c;
	if (shown.widths == NULL || shown.ncols != t->ncols) {
		free(shown.widths);
		shown.widths = xcalloc(t->ncols, sizeof(size_t));
		shown.ncols = t->ncols;
	}
	for (size_t r = 0; r < t->nrows; r++)
		for (size_t i = 0; i < t->ncols; i++) {
			size_t n = strlen(t->cells[r * t->ncols + i]);

			if (n > shown.widths[i])
				shown.widths[i] = n;
		}
	if (!shown.header_done && t->nrows > 1) {
		print_row(t, 0);
		shown.header_done = 1;
	}
	for (size_t r = 1; r < t->nrows; r++) {
		char *k = row_key(t, r);

		/* a listing of n rows costs n log n, not n times the last one's */
		if (shown.nseen == 0 ||
		    bsearch(&k, shown.seen, shown.nseen, sizeof(char *), key_cmp) == NULL)
			print_row(t, r);
		keys[nkeys++] = k;
	}
	qsort(keys, nkeys, sizeof(char *), key_cmp);
	for (size_t i = 0; i < shown.nseen; i++)
		free(shown.seen[i]);
	free(shown.seen);
	shown.seen = keys;
	shown.nseen = nkeys;
	fflush(stdout);
}

int
cli_watch(struct cli *c, int (*list)(struct cli *))
{
	struct store_watch *w;
	struct sigaction sa;
	char *prefix;
	int dirty = 0, rc;

	if (c->out != OUT_TABLE && c->out != OUT_WIDE && c->out != OUT_COLUMNS)
		return cli_usage_error(c, "--watch prints a table: use it with the default "
		    "output, -o wide or -o custom-columns=...");
	if (cli_store(c) == NULL)
		return CLI_FAIL;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* watch first, list second: nothing can slip between the two */
	prefix = xasprintf("%s/", keys_prefix());
	w = store_watch_new(c->st, prefix, 0, on_event, &dirty);
	free(prefix);
	if (w == NULL)
		return cli_error("cannot watch the store: %s", store_error(c->st));
	c->watch = 2;
	rc = list(c);
	c->watch = 3;
	while (rc == CLI_OK && !stop) {
		struct pollfd pfd = { store_watch_fd(w), POLLIN, 0 };
		int tmo = store_watch_timeout_ms(w);

		if (poll(&pfd, pfd.fd >= 0 ? 1 : 0, tmo < 0 || tmo > 1000 ? 1000 : tmo) < 0 &&
		    errno != EINTR) {
			rc = cli_error("poll: %s", strerror(errno));
			break;
		}
		if (stop)
			break;
		if (store_watch_dispatch(w) < 0) {
			rc = cli_error("watch: %s", store_error(c->st));
			break;
		}
		if (dirty) {
			dirty = 0;
			rc = list(c);
		}
	}
	store_watch_free(w);
	for (size_t i = 0; i < shown.nseen; i++)
		free(shown.seen[i]);
	free(shown.seen);
	free(shown.widths);
	memset(&shown, 0, sizeof(shown));
	return rc;
}

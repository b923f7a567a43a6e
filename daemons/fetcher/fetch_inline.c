/*
 * fetch_inline - turns spec.inline.value into a tree.  Each value is
 * re-serialised from the parsed resource (numbers keep their text, strings
 * are re-escaped); the renderer compacts it again, so the published bytes
 * do not depend on how the value was written.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/util.h"
#include "daemons/fetcher/fetch_inline.h"
#include "daemons/fetcher/fetch_keys.h"

int
fetch_inline(struct spool *sp, const struct fetch_limits *lim, yajl_val value,
    struct fetch_result *res)
{
	struct fetch_tree *t;
	struct buf b;
	struct jw w;
	char *path;
	int rc = 0;

	memset(res, 0, sizeof(*res));
	if (value == NULL)
		return fetch_result_error(res, "FetchError",
		    "source inline: spec.inline.value is missing");
	if (!YAJL_IS_OBJECT(value))
		return fetch_result_error(res, "FetchError",
		    "source inline: spec.inline.value must be an object of blocks");
	t = fetch_tree_new(sp, lim);
	buf_init(&b);
	for (size_t i = 0; i < value->u.object.len && rc == 0; i++) {
		const char *key = value->u.object.keys[i];
		size_t kl = strlen(key);
		/* as the operator: one trailing ".json" goes (Header.json -> Header), no URL-decoding */
		char *bk = kl >= 5 && strcmp(key + kl - 5, ".json") == 0 ? xstrndup(key, kl - 5) :
		    xstrdup(key);

		if (fetch_key_inline(bk, strlen(bk), res->error, sizeof(res->error)) < 0) {
			res->reason = "FetchError";
			free(bk);
			rc = -1;
			break;
		}
		buf_reset(&b);
		jw_init(&w, &b);
		jw_value(&w, value->u.object.values[i]);
		path = xasprintf("inline:%s", key);
		rc = fetch_tree_add(t, bk, path, b.data, b.len, res);
		free(path);
		free(bk);
	}
	if (rc == 0)
		rc = fetch_tree_finish(t, "inline", NULL, res);
	buf_free(&b);
	fetch_tree_free(t);
	return rc;
}

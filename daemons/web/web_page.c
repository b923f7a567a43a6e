/*
 * web_page - the status page's files, installed with decod in
 * web_static_dir (hand-written HTML, CSS and plain JavaScript; nothing is
 * fetched from elsewhere).  Only the files named here are served, so no
 * URL reaches another file.  The page renders every value it gets from
 * /api/v1 as text (textContent), never as markup.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "common/log.h"
#include "daemons/web/web.h"

static const struct {
	const char *url, *file, *type;
} files[] = {
	{ "/", "index.html", "text/html; charset=utf-8" },
	{ "/static/style.css", "style.css", "text/css; charset=utf-8" },
	{ "/static/app.js", "app.js", "text/javascript; charset=utf-8" },
	{ "/static/detail.js", "detail.js", "text/javascript; charset=utf-8" },
};

enum MHD_Result
web_static_answer(struct web *w, struct MHD_Connection *c, const char *url)
{
	const char *file = NULL, *type = NULL;
	char path[4096];
	struct buf b;
	size_t len;
	char *data;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (strcmp(url, files[i].url) == 0) {
			file = files[i].file;
			type = files[i].type;
		}
	/* /decofiles/{ns}/{name}: one page, which reads its names from the URL */
	if (file == NULL && strncmp(url, "/decofiles/", 11) == 0) {
		file = "detail.html";
		type = "text/html; charset=utf-8";
	}
	if (file == NULL)
		return web_reply_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
	snprintf(path, sizeof(path), "%s/%s", w->static_dir, file);
	if ((data = read_file(path, &len, 4 << 20)) == NULL) {
		log_kv(LOG_ERROR, "cannot read a page file (web_static_dir)", "path", path,
		    "error", strerror(errno), NULL);
		return web_reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
		    "the page's files are missing (web_static_dir)\n");
	}
	buf_init(&b);
	buf_add(&b, data, len);
	free(data);
	return web_reply(c, MHD_HTTP_OK, type, &b);
}

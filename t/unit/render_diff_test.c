/*
 * render_diff_test - the preview's comparison of two rendered documents:
 * blocks added, removed and changed, keys one and two levels deep, blocks
 * replaced whole, names with accents, spaces and dots, key order and
 * number bytes, identical documents (nothing), the summary line and the
 * JSON form.
 */
#include "config.h"

#include <string.h>

#include "common/json.h"
#include "common/util.h"
#include "daemons/renderer/render_diff.h"
#include "t/tap.h"

/* shown - the diff as one line per entry: "~Block" then "  +path" */
static char *
shown(const char *a, const char *b, char *summary, size_t slen)
{
	struct render_diff d;
	struct buf out, s;
	char why[256];

	buf_init(&out);
	if (render_diff_docs(a, strlen(a), b, strlen(b), &d, why, sizeof(why)) < 0) {
		buf_printf(&out, "error: %s", why);
		if (summary)
			summary[0] = '\0';
		buf_adds(&out, "");
		return buf_steal(&out, NULL);
	}
	for (size_t i = 0; i < d.n; i++) {
		buf_printf(&out, "%s%c%s%s", i ? "|" : "", d.blocks[i].op, d.blocks[i].name,
		    d.blocks[i].whole ? "(whole)" : "");
		for (size_t k = 0; k < d.blocks[i].nkeys; k++) {
			buf_printf(&out, " %c", d.blocks[i].keys[k].op);
			render_diff_path(&out, &d.blocks[i].keys[k]);
		}
	}
	buf_adds(&out, "");
	if (summary) {
		buf_init(&s);
		render_diff_summary(&s, &d);
		buf_adds(&s, "");
		snprintf(summary, slen, "%s", s.data);
		buf_free(&s);
	}
	render_diff_free(&d);
	return buf_steal(&out, NULL);
}

static void
check(const char *label, const char *a, const char *b, const char *want,
    const char *want_summary)
{
	char sum[256];
	char *got = shown(a, b, sum, sizeof(sum));

	is_str(got, want, label);
	if (want_summary)
		is_str(sum, want_summary, "%s: summary", label);
	free(got);
}

int
main(void)
{
	struct render_diff d;
	struct buf b;
	struct jw w;
	char why[256];
	const char *a, *c;

	check("identical documents: nothing",
	    "{\"A\":{\"x\":1,\"y\":[1,2]},\"B\":\"s\"}",
	    "{\"B\":\"s\",\"A\":{\"y\":[1,2],\"x\":1}}", "",
	    "0 blocks changed (0 keys), 0 added, 0 removed");
	check("empty documents: nothing", "{}", "{}", "", NULL);
	check("a block added and one removed",
	    "{\"A\":1,\"Old\":{\"k\":1}}", "{\"A\":1,\"New\":{\"k\":1}}", "+New|-Old",
	    "0 blocks changed (0 keys), 1 added, 1 removed");
	check("keys added, removed, changed at the top of a block",
	    "{\"Theme\":{\"color\":\"red\",\"font\":\"x\",\"gone\":true}}",
	    "{\"Theme\":{\"color\":\"blue\",\"font\":\"x\",\"new\":null}}",
	    "~Theme ~color -gone +new", "1 block changed (3 keys), 0 added, 0 removed");
	check("nested keys: two levels, deeper compared whole",
	    "{\"Seo\":{\"meta\":{\"title\":\"a\",\"og\":{\"img\":\"1\"},\"x\":1},\"n\":1}}",
	    "{\"Seo\":{\"meta\":{\"title\":\"b\",\"og\":{\"img\":\"2\"},\"y\":1},\"n\":1}}",
	    "~Seo ~meta.og ~meta.title -meta.x +meta.y",
	    "1 block changed (4 keys), 0 added, 0 removed");
	check("an object turned into a scalar is one changed key",
	    "{\"B\":{\"k\":{\"a\":1}}}", "{\"B\":{\"k\":2}}", "~B ~k", NULL);
	check("arrays compared whole",
	    "{\"B\":{\"list\":[1,{\"a\":1}]}}", "{\"B\":{\"list\":[1,{\"a\":2}]}}",
	    "~B ~list", NULL);
	check("numbers by the bytes written", "{\"B\":{\"n\":1}}", "{\"B\":{\"n\":1.0}}",
	    "~B ~n", NULL);
	check("a block that is not an object: replaced whole",
	    "{\"B\":[1,2],\"C\":\"x\"}", "{\"B\":[1,3],\"C\":{\"x\":1}}", "~B(whole)|~C(whole)",
	    "2 blocks changed (0 keys), 0 added, 0 removed");
	check("accented and spaced block names, dotted and spaced keys",
	    "{\"Página inicial\":{\"título\":\"a\",\"a.b\":{\"c d\":1}},\"Promoção\":{}}",
	    "{\"Página inicial\":{\"título\":\"b\",\"a.b\":{\"c d\":2}}}",
	    "-Promoção|~Página inicial ~\"a.b\".\"c d\" ~título", NULL);
	check("block names in byte order, the summary counts every block",
	    "{\"b\":{\"k\":1},\"d\":{\"k\":1,\"j\":1}}",
	    "{\"a\":{},\"b\":{\"k\":2},\"d\":{\"k\":2,\"j\":2},\"c\":1}",
	    "+a|~b ~k|+c|~d ~j ~k", "2 blocks changed (3 keys), 2 added, 0 removed");
	check("singular words", "{\"b\":{\"k\":1}}", "{\"b\":{\"k\":2}}", "~b ~k",
	    "1 block changed (1 key), 0 added, 0 removed");
	check("not an object: an error", "[1]", "{}", "error: the current document is not a "
	    "JSON object", NULL);
	check("not JSON: an error", "{}", "{", "error: the new document is not a JSON object",
	    NULL);

	/* the JSON form */
	a = "{\"A\":{\"x\":{\"y\":1}},\"B\":1,\"C\":[1]}";
	c = "{\"A\":{\"x\":{\"y\":2}},\"C\":[2],\"D\":{}}";
	ok(render_diff_docs(a, strlen(a), c, strlen(c), &d, why, sizeof(why)) == 0,
	    "JSON form: compared");
	buf_init(&b);
	jw_init(&w, &b);
	render_diff_json(&w, &d);
	buf_adds(&b, "");
	is_str(b.data, "[{\"name\":\"A\",\"change\":\"changed\",\"keys\":[{\"path\":[\"x\",\"y\"],"
	    "\"change\":\"changed\"}]},{\"name\":\"B\",\"change\":\"removed\"},{\"name\":\"C\","
	    "\"change\":\"changed\",\"replaced\":true,\"keys\":[]},{\"name\":\"D\",\"change\":"
	    "\"added\"}]", "JSON form: blocks, keys as path arrays, a block replaced whole");
	buf_free(&b);
	render_diff_free(&d);
	done_testing();
}

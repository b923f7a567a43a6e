/*
 * cli_jsonpath - the part of kubectl's JSONPath that people type: a
 * template is compiled once into a list of nodes (text, expression, range
 * with its body), then run over a yajl tree.  An expression is a list of
 * steps applied to a set of values, as client-go's jsonpath does; what it
 * does not support is refused at compile time, never guessed.
 */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_jsonpath.h"
#include "common/json.h"

enum step_kind { ST_FIELD, ST_WILD, ST_INDEX, ST_SLICE, ST_FILTER };
enum filter_op { OP_EXISTS, OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE };

struct jp_filter;

struct jp_step {
	enum step_kind kind;
	char *name;			/* ST_FIELD */
	long long a, b, s;		/* ST_INDEX: a; ST_SLICE: a:b:s */
	int has_a, has_b;
	struct jp_filter *f;		/* ST_FILTER */
};

struct jp_expr {
	int from_root;			/* $ */
	struct jp_step *steps;
	size_t n;
};

struct jp_filter {
	struct jp_expr lhs;		/* relative to @ */
	enum filter_op op;
	char *value;			/* a string's bytes or a number's text */
	int value_is_str;
};

enum node_kind { N_TEXT, N_EXPR, N_RANGE };

struct jp_node {
	enum node_kind kind;
	char *text;			/* N_TEXT */
	struct jp_expr e;		/* N_EXPR, N_RANGE */
	struct jp_node *body;		/* N_RANGE */
	size_t nbody;
};

struct cli_jsonpath {
	struct jp_node *nodes;
	size_t n;
};

/* a parser's position and its first error */
struct parser {
	const char *s, *p;
	char *err;
	size_t errlen;
	int failed;
};

/* a set of values an expression reached */
struct vals {
	yajl_val *v;
	size_t n;
};

static void
fail(struct parser *ps, const char *fmt, ...)
{
	va_list ap;
	int off;

	if (ps->failed)
		return;
	ps->failed = 1;
	va_start(ap, fmt);
	off = vsnprintf(ps->err, ps->errlen, fmt, ap);
	va_end(ap);
	if (off >= 0 && (size_t)off < ps->errlen)
		snprintf(ps->err + off, ps->errlen - (size_t)off, " at offset %d of \"%s\"",
		    (int)(ps->p - ps->s), ps->s);
}

static void
skip_ws(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t')
		ps->p++;
}

static void
expr_free(struct jp_expr *e)
{
	for (size_t i = 0; i < e->n; i++) {
		free(e->steps[i].name);
		if (e->steps[i].f) {
			expr_free(&e->steps[i].f->lhs);
			free(e->steps[i].f->value);
			free(e->steps[i].f);
		}
	}
	free(e->steps);
	e->steps = NULL;
	e->n = 0;
}

static void
nodes_free(struct jp_node *nodes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(nodes[i].text);
		expr_free(&nodes[i].e);
		nodes_free(nodes[i].body, nodes[i].nbody);
	}
	free(nodes);
}

static struct jp_step *
add_step(struct jp_expr *e, enum step_kind kind)
{
	e->steps = xrealloc(e->steps, (e->n + 1) * sizeof(*e->steps));
	memset(&e->steps[e->n], 0, sizeof(*e->steps));
	e->steps[e->n].kind = kind;
	return &e->steps[e->n++];
}

/* parse_quoted - 'x' or "x" with \n \t \\ \' \" escapes; malloc'd, or NULL */
static char *
parse_quoted(struct parser *ps)
{
	char q = *ps->p++;
	struct buf b;

	buf_init(&b);
	buf_adds(&b, "");
	while (*ps->p && *ps->p != q) {
		char ch = *ps->p++;

		if (ch == '\\' && *ps->p) {
			ch = *ps->p++;
			ch = ch == 'n' ? '\n' : ch == 't' ? '\t' : ch == 'r' ? '\r' : ch;
		}
		buf_addc(&b, ch);
	}
	if (*ps->p != q) {
		fail(ps, "unterminated quoted string");
		buf_free(&b);
		return NULL;
	}
	ps->p++;
	return buf_steal(&b, NULL);
}

/* parse_int - an optional sign and digits; 0, or -1 if there are none */
static int
parse_int(struct parser *ps, long long *out)
{
	char *end;

	if (!isdigit((unsigned char)ps->p[*ps->p == '-' || *ps->p == '+']))
		return -1;
	*out = strtoll(ps->p, &end, 10);
	ps->p = end;
	return 0;
}

static int parse_expr(struct parser *ps, struct jp_expr *e, int in_filter);

/* parse_filter - after "[?(": @.path [OP value] then ")]" */
static void
parse_filter(struct parser *ps, struct jp_step *st)
{
	static const struct {
		const char *text;
		enum filter_op op;
	} ops[] = { { "==", OP_EQ }, { "!=", OP_NE }, { "<=", OP_LE }, { ">=", OP_GE },
		    { "<", OP_LT }, { ">", OP_GT } };
	struct jp_filter *f = xcalloc(1, sizeof(*f));

	st->f = f;
	skip_ws(ps);
	if (*ps->p != '@') {
		fail(ps, "a filter must start with @ (as in [?(@.type==\"Ready\")])");
		return;
	}
	if (parse_expr(ps, &f->lhs, 1) < 0)
		return;
	skip_ws(ps);
	f->op = OP_EXISTS;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (strncmp(ps->p, ops[i].text, strlen(ops[i].text)) == 0) {
			f->op = ops[i].op;
			ps->p += strlen(ops[i].text);
			break;
		}
	}
	skip_ws(ps);
	if (f->op != OP_EXISTS) {
		if (*ps->p == '"' || *ps->p == '\'') {
			f->value = parse_quoted(ps);
			f->value_is_str = 1;
		} else {
			size_t n = strcspn(ps->p, " \t)");

			if (n == 0) {
				fail(ps, "a filter comparison needs a value");
				return;
			}
			f->value = xstrndup(ps->p, n);
			ps->p += n;
		}
		skip_ws(ps);
	}
	if (strncmp(ps->p, "&&", 2) == 0 || strncmp(ps->p, "||", 2) == 0 ||
	    strncmp(ps->p, "=~", 2) == 0) {
		fail(ps, "unsupported in a filter: %.2s (one comparison per filter)", ps->p);
		return;
	}
	if (strncmp(ps->p, ")]", 2) != 0) {
		fail(ps, "a filter must end with )]");
		return;
	}
	ps->p += 2;
}

/* parse_bracket - after "[": * | N | A:B:S | 'name' | ?(filter), then "]" */
static void
parse_bracket(struct parser *ps, struct jp_expr *e)
{
	struct jp_step *st;
	long long v;

	skip_ws(ps);
	if (*ps->p == '*') {
		ps->p++;
		add_step(e, ST_WILD);
	} else if (*ps->p == '\'' || *ps->p == '"') {
		char *name = parse_quoted(ps);

		if (name == NULL)
			return;
		skip_ws(ps);
		if (*ps->p == ',') {
			free(name);
			fail(ps, "unsupported: unions ([a,b])");
			return;
		}
		add_step(e, ST_FIELD)->name = name;
	} else if (*ps->p == '?') {
		ps->p++;
		if (*ps->p != '(') {
			fail(ps, "a filter is written [?(...)]");
			return;
		}
		ps->p++;
		parse_filter(ps, add_step(e, ST_FILTER));
		return;	/* parse_filter ate the "]" */
	} else {
		int has_a = parse_int(ps, &v) == 0;

		skip_ws(ps);
		if (*ps->p == ':') {
			st = add_step(e, ST_SLICE);
			st->has_a = has_a;
			st->a = has_a ? v : 0;
			ps->p++;
			skip_ws(ps);
			st->has_b = parse_int(ps, &st->b) == 0;
			st->s = 1;
			skip_ws(ps);
			if (*ps->p == ':') {
				ps->p++;
				if (parse_int(ps, &st->s) < 0 || st->s == 0) {
					fail(ps, "a slice step must be a number other than 0");
					return;
				}
			}
		} else if (has_a) {
			if (*ps->p == ',') {
				fail(ps, "unsupported: unions ([0,1])");
				return;
			}
			st = add_step(e, ST_INDEX);
			st->a = v;
		} else {
			fail(ps, "unsupported subscript [%.10s", ps->p);
			return;
		}
	}
	skip_ws(ps);
	if (*ps->p != ']') {
		fail(ps, "missing ]");
		return;
	}
	ps->p++;
}

/*
 * parse_expr - [$|@] then steps, up to "}" (or, in a filter, up to an
 * operator or ")").  0 or -1 (failed).
 */
static int
parse_expr(struct parser *ps, struct jp_expr *e, int in_filter)
{
	memset(e, 0, sizeof(*e));
	skip_ws(ps);
	if (*ps->p == '$') {
		e->from_root = 1;
		ps->p++;
	} else if (*ps->p == '@') {
		ps->p++;
	} else if (*ps->p != '.' && *ps->p != '[') {
		fail(ps, "an expression starts with . or [ or $ or @ (as in {.metadata.name})");
		return -1;
	}
	while (!ps->failed) {
		if (ps->p[0] == '.' && ps->p[1] == '.') {
			fail(ps, "unsupported: recursive descent (..)");
		} else if (ps->p[0] == '.' && ps->p[1] == '*') {
			ps->p += 2;
			add_step(e, ST_WILD);
		} else if (ps->p[0] == '.' && ps->p[1] == '[') {
			ps->p += 2;
			parse_bracket(ps, e);
		} else if (ps->p[0] == '.') {
			size_t n;

			ps->p++;
			n = strcspn(ps->p, ".[]{}()'\" \t,=!<>&|~");
			if (n == 0) {
				if (*ps->p == '}' || (in_filter && *ps->p == ')'))
					continue;	/* "{.}": the value itself */
				fail(ps, "a field name is missing after the dot");
				break;
			}
			add_step(e, ST_FIELD)->name = xstrndup(ps->p, n);
			ps->p += n;
		} else if (ps->p[0] == '[') {
			ps->p++;
			parse_bracket(ps, e);
		} else {
			break;
		}
	}
	if (ps->failed)
		return -1;
	skip_ws(ps);
	if (!in_filter && *ps->p != '}') {
		fail(ps, *ps->p ? "unexpected \"%c\" in an expression" :
		    "missing } after an expression", *ps->p);
		return -1;
	}
	return 0;
}

/*
 * parse_nodes - text and actions up to the end of the template, or up to
 * {end} when in_range.  0 or -1.
 */
static int
parse_nodes(struct parser *ps, struct jp_node **out, size_t *nout, int in_range)
{
	struct jp_node *nodes = NULL;
	size_t n = 0;

	for (;;) {
		struct jp_node *nd;
		size_t text = strcspn(ps->p, "{");

		if (text > 0) {
			nodes = xrealloc(nodes, (n + 1) * sizeof(*nodes));
			nd = memset(&nodes[n++], 0, sizeof(*nodes));
			nd->kind = N_TEXT;
			nd->text = xstrndup(ps->p, text);
			ps->p += text;
		}
		if (*ps->p == '\0') {
			if (in_range)
				fail(ps, "{range} without {end}");
			break;
		}
		ps->p++;	/* { */
		skip_ws(ps);
		if (strncmp(ps->p, "end", 3) == 0 && strchr(" \t}", ps->p[3])) {
			ps->p += 3;
			skip_ws(ps);
			if (*ps->p != '}')
				fail(ps, "missing } after end");
			else if (!in_range)
				fail(ps, "{end} without {range}");
			else
				ps->p++;
			break;
		}
		nodes = xrealloc(nodes, (n + 1) * sizeof(*nodes));
		nd = memset(&nodes[n++], 0, sizeof(*nodes));
		if (*ps->p == '"' || *ps->p == '\'') {
			nd->kind = N_TEXT;
			if ((nd->text = parse_quoted(ps)) == NULL)
				break;
			skip_ws(ps);
			if (*ps->p != '}') {
				fail(ps, "missing } after a quoted string");
				break;
			}
			ps->p++;
			continue;
		}
		if (strncmp(ps->p, "range", 5) == 0 && (ps->p[5] == ' ' || ps->p[5] == '\t')) {
			ps->p += 5;
			nd->kind = N_RANGE;
			if (parse_expr(ps, &nd->e, 0) < 0)
				break;
			ps->p++;	/* } */
			if (parse_nodes(ps, &nd->body, &nd->nbody, 1) < 0)
				break;
			continue;
		}
		nd->kind = N_EXPR;
		if (parse_expr(ps, &nd->e, 0) < 0)
			break;
		ps->p++;	/* } */
	}
	*out = nodes;
	*nout = n;
	return ps->failed ? -1 : 0;
}

struct cli_jsonpath *
cli_jsonpath_parse(const char *tmpl, char *err, size_t errlen)
{
	struct parser ps = { tmpl, tmpl, err, errlen, 0 };
	struct cli_jsonpath *p = xcalloc(1, sizeof(*p));

	if (parse_nodes(&ps, &p->nodes, &p->n, 0) < 0) {
		cli_jsonpath_free(p);
		return NULL;
	}
	return p;
}

void
cli_jsonpath_free(struct cli_jsonpath *p)
{
	if (p == NULL)
		return;
	nodes_free(p->nodes, p->n);
	free(p);
}

/* --- evaluation ------------------------------------------------------- */

static void
vals_add(struct vals *vs, yajl_val v)
{
	vs->v = xrealloc(vs->v, (vs->n + 1) * sizeof(*vs->v));
	vs->v[vs->n++] = v;
}

static void eval_expr(const struct jp_expr *e, yajl_val root, yajl_val cur, struct vals *out);

/* compare - the filter's comparison of v with the filter's value */
static int
compare(const struct jp_filter *f, yajl_val v)
{
	int c;

	if (f->value_is_str) {
		if (!YAJL_IS_STRING(v))
			return f->op == OP_NE;
		c = strcmp(v->u.string, f->value);
	} else if (YAJL_IS_NUMBER(v)) {
		double a = YAJL_GET_DOUBLE(v), b = strtod(f->value, NULL);

		c = a < b ? -1 : a > b;
	} else {
		const char *lit = YAJL_IS_TRUE(v) ? "true" : YAJL_IS_FALSE(v) ? "false" :
		    YAJL_IS_NULL(v) ? "null" : NULL;

		if (lit == NULL)
			return f->op == OP_NE;
		c = strcmp(lit, f->value);
	}
	switch (f->op) {
	case OP_EQ: return c == 0;
	case OP_NE: return c != 0;
	case OP_LT: return c < 0;
	case OP_LE: return c <= 0;
	case OP_GT: return c > 0;
	case OP_GE: return c >= 0;
	default: return 1;
	}
}

/* apply_step - what one step reaches from each of in */
static void
apply_step(const struct jp_step *st, yajl_val root, const struct vals *in, struct vals *out)
{
	for (size_t i = 0; i < in->n; i++) {
		yajl_val v = in->v[i];
		long long len = YAJL_IS_ARRAY(v) ? (long long)v->u.array.len : 0;

		switch (st->kind) {
		case ST_FIELD:
			for (size_t k = 0; YAJL_IS_OBJECT(v) && k < v->u.object.len; k++)
				if (strcmp(v->u.object.keys[k], st->name) == 0)
					vals_add(out, v->u.object.values[k]);
			break;
		case ST_WILD:
			for (size_t k = 0; YAJL_IS_OBJECT(v) && k < v->u.object.len; k++)
				vals_add(out, v->u.object.values[k]);
			for (long long k = 0; k < len; k++)
				vals_add(out, v->u.array.values[k]);
			break;
		case ST_INDEX: {
			long long k = st->a < 0 ? len + st->a : st->a;

			if (k >= 0 && k < len)
				vals_add(out, v->u.array.values[k]);
			break;
		}
		case ST_SLICE: {
			long long a = st->has_a ? st->a : (st->s > 0 ? 0 : len - 1);
			long long b = st->has_b ? st->b : (st->s > 0 ? len : -len - 1);
			/* a step longer than the array takes one element: no overflow */
			long long step = st->s > len ? len + 1 : st->s < -len ? -len - 1 : st->s;

			if (!YAJL_IS_ARRAY(v))
				break;
			if (a < 0)
				a += len;
			if (b < 0)
				b += len;
			if (st->s > 0) {
				a = a < 0 ? 0 : a;
				b = b > len ? len : b;
				for (long long k = a; k < b; k += step)
					vals_add(out, v->u.array.values[k]);
			} else {
				a = a >= len ? len - 1 : a;
				for (long long k = a; k > b && k >= 0; k += step)
					vals_add(out, v->u.array.values[k]);
			}
			break;
		}
		case ST_FILTER:
			for (long long k = 0; k < len; k++) {
				struct vals lhs = { NULL, 0 };
				yajl_val el = v->u.array.values[k];

				eval_expr(&st->f->lhs, root, el, &lhs);
				if (lhs.n > 0 && (st->f->op == OP_EXISTS || compare(st->f, lhs.v[0])))
					vals_add(out, el);
				free(lhs.v);
			}
			break;
		}
	}
}

static void
eval_expr(const struct jp_expr *e, yajl_val root, yajl_val cur, struct vals *out)
{
	struct vals a = { NULL, 0 };

	vals_add(&a, e->from_root ? root : cur);
	for (size_t i = 0; i < e->n; i++) {
		struct vals b = { NULL, 0 };

		apply_step(&e->steps[i], root, &a, &b);
		free(a.v);
		a = b;
		if (a.n == 0)
			break;
	}
	for (size_t i = 0; i < a.n; i++)
		if (a.v[i] != NULL)
			vals_add(out, a.v[i]);
	free(a.v);
}

/* print_value - one result as kubectl prints it */
static void
print_value(yajl_val v, struct buf *out)
{
	if (YAJL_IS_STRING(v)) {
		buf_adds(out, YAJL_GET_STRING(v));
	} else if (YAJL_IS_NUMBER(v)) {
		buf_adds(out, YAJL_GET_NUMBER(v));
	} else if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v) || YAJL_IS_NULL(v)) {
		buf_adds(out, YAJL_IS_TRUE(v) ? "true" : YAJL_IS_FALSE(v) ? "false" : "null");
	} else {
		struct jw w;

		jw_init(&w, out);
		jw_value(&w, v);
	}
}

static void
exec_nodes(const struct jp_node *nodes, size_t n, yajl_val root, yajl_val cur,
    struct buf *out)
{
	for (size_t i = 0; i < n; i++) {
		struct vals r = { NULL, 0 };

		if (nodes[i].kind == N_TEXT) {
			buf_adds(out, nodes[i].text);
			continue;
		}
		eval_expr(&nodes[i].e, root, cur, &r);
		for (size_t k = 0; k < r.n; k++) {
			if (nodes[i].kind == N_RANGE) {
				exec_nodes(nodes[i].body, nodes[i].nbody, root, r.v[k], out);
				continue;
			}
			if (k > 0)
				buf_addc(out, ' ');
			print_value(r.v[k], out);
		}
		free(r.v);
	}
}

void
cli_jsonpath_exec(const struct cli_jsonpath *p, yajl_val root, struct buf *out)
{
	buf_adds(out, "");
	exec_nodes(p->nodes, p->n, root, root, out);
}

/* --- custom columns --------------------------------------------------- */

struct cli_jsonpath_columns *
cli_jsonpath_columns_parse(const char *spec, char *err, size_t errlen)
{
	struct cli_jsonpath_columns *cols = xcalloc(1, sizeof(*cols));
	const char *p = spec;

	if (*spec == '\0') {
		snprintf(err, errlen, "custom-columns needs NAME:EXPR[,NAME:EXPR...] (as in "
		    "custom-columns=NAME:.metadata.name)");
		free(cols);
		return NULL;
	}
	while (*p) {
		size_t n = strcspn(p, ",");
		char *col = xstrndup(p, n), *colon = strchr(col, ':'), *expr, *tmpl;
		struct cli_jsonpath *jp;

		p += n + (p[n] == ',');
		if (colon == NULL || colon == col || colon[1] == '\0') {
			snprintf(err, errlen, "custom-columns: \"%s\" is not NAME:EXPR", col);
			free(col);
			cli_jsonpath_columns_free(cols);
			return NULL;
		}
		*colon = '\0';
		expr = colon + 1;
		/* kubectl's relaxed form: braces and the first dot are optional */
		if (*expr == '{' && expr[strlen(expr) - 1] == '}') {
			expr++;
			expr[strlen(expr) - 1] = '\0';
		}
		tmpl = xasprintf("{%s%s}", strchr(".[$@", *expr) && *expr ? "" : ".", expr);
		jp = cli_jsonpath_parse(tmpl, err, errlen);
		free(tmpl);
		if (jp == NULL) {
			free(col);
			cli_jsonpath_columns_free(cols);
			return NULL;
		}
		cols->headers = xrealloc(cols->headers, (cols->n + 1) * sizeof(char *));
		cols->paths = xrealloc(cols->paths, (cols->n + 1) * sizeof(*cols->paths));
		cols->headers[cols->n] = xstrdup(col);
		cols->paths[cols->n++] = jp;
		free(col);
	}
	return cols;
}

void
cli_jsonpath_columns_free(struct cli_jsonpath_columns *cols)
{
	if (cols == NULL)
		return;
	for (size_t i = 0; i < cols->n; i++) {
		free(cols->headers[i]);
		cli_jsonpath_free(cols->paths[i]);
	}
	free(cols->headers);
	free(cols->paths);
	free(cols);
}

void
cli_jsonpath_cell(const struct cli_jsonpath_columns *cols, size_t i, yajl_val obj,
    struct buf *out)
{
	const struct jp_node *nd = &cols->paths[i]->nodes[0];
	struct vals r = { NULL, 0 };

	buf_reset(out);
	buf_adds(out, "");
	eval_expr(&nd->e, obj, obj, &r);
	for (size_t k = 0; k < r.n; k++) {
		if (k > 0)
			buf_addc(out, ',');
		print_value(r.v[k], out);
	}
	if (r.n == 0)
		buf_adds(out, "<none>");
	free(r.v);
}

yajl_val *
cli_jsonpath_items(yajl_val v, size_t *n)
{
	const char *kind = json_get_str(v, "kind", NULL);
	yajl_val items = json_get(v, "items", NULL);
	yajl_val *out;

	if (kind != NULL && strcmp(kind, "List") == 0 && YAJL_IS_ARRAY(items))
		v = items;
	if (YAJL_IS_ARRAY(v)) {
		*n = v->u.array.len;
		out = xcalloc(*n + 1, sizeof(*out));
		for (size_t i = 0; i < *n; i++)
			out[i] = v->u.array.values[i];
		return out;
	}
	*n = 1;
	out = xcalloc(2, sizeof(*out));
	out[0] = v;
	return out;
}

/*
 * cli_print - decoctl's output of a yajl tree: YAML through libyaml's
 * emitter (block style; a string any YAML reader would take for another
 * type is quoted), or JSON through yajl's beautifying generator.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_gen.h>
#include <yaml.h>

#include "cli/cli_yaml.h"
#include "common/json.h"

static int
emit(yaml_emitter_t *em, yaml_event_t *ev)
{
	return yaml_emitter_emit(em, ev) ? 0 : -1;
}

static int
emit_scalar(yaml_emitter_t *em, const char *s, size_t len, int quote)
{
	yaml_event_t ev;

	yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)len,
	    !quote, 1, quote ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE);
	return emit(em, &ev);
}

/*
 * emit_value - emit one value; depth guards the recursion (trees come from
 * json_parse, which already refuses nesting past json_max_depth).
 */
static int
emit_value(yaml_emitter_t *em, yajl_val v, int depth)
{
	yaml_event_t ev;
	char tmp[32];

	if (depth > json_get_max_depth() + 1)
		return -1;
	if (v == NULL || YAJL_IS_NULL(v))
		return emit_scalar(em, "null", 4, 0);
	if (YAJL_IS_TRUE(v))
		return emit_scalar(em, "true", 4, 0);
	if (YAJL_IS_FALSE(v))
		return emit_scalar(em, "false", 5, 0);
	if (YAJL_IS_NUMBER(v)) {
		const char *r = v->u.number.r;

		if (r == NULL) {
			snprintf(tmp, sizeof(tmp), "%lld", (long long)YAJL_GET_INTEGER(v));
			r = tmp;
		}
		return emit_scalar(em, r, strlen(r), 0);
	}
	if (YAJL_IS_STRING(v)) {
		const char *s = YAJL_GET_STRING(v);
		size_t len = strlen(s);

		return emit_scalar(em, s, len, !yaml_plain_is_safe(s, len));
	}
	if (YAJL_IS_ARRAY(v)) {
		yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE);
		if (emit(em, &ev) < 0)
			return -1;
		for (size_t i = 0; i < v->u.array.len; i++)
			if (emit_value(em, v->u.array.values[i], depth + 1) < 0)
				return -1;
		yaml_sequence_end_event_initialize(&ev);
		return emit(em, &ev);
	}
	yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
	if (emit(em, &ev) < 0)
		return -1;
	for (size_t i = 0; i < v->u.object.len; i++) {
		const char *k = v->u.object.keys[i];

		if (emit_scalar(em, k, strlen(k), !yaml_plain_is_safe(k, strlen(k))) < 0 ||
		    emit_value(em, v->u.object.values[i], depth + 1) < 0)
			return -1;
	}
	yaml_mapping_end_event_initialize(&ev);
	return emit(em, &ev);
}

int
cli_print_yaml(FILE *out, yajl_val v)
{
	yaml_emitter_t em;
	yaml_event_t ev;
	char *text = NULL;
	size_t len = 0;
	FILE *mem;
	int rc = -1;

	if ((mem = open_memstream(&text, &len)) == NULL)
		return -1;
	if (!yaml_emitter_initialize(&em)) {
		fclose(mem);
		free(text);
		return -1;
	}
	yaml_emitter_set_output_file(&em, mem);
	yaml_emitter_set_unicode(&em, 1);
	yaml_emitter_set_width(&em, -1);
	yaml_emitter_set_indent(&em, 2);
	yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
	if (emit(&em, &ev) < 0)
		goto out;
	yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
	if (emit(&em, &ev) < 0 || emit_value(&em, v, 0) < 0)
		goto out;
	yaml_document_end_event_initialize(&ev, 1);
	if (emit(&em, &ev) < 0)
		goto out;
	yaml_stream_end_event_initialize(&ev);
	if (emit(&em, &ev) < 0)
		goto out;
	rc = yaml_emitter_flush(&em) ? 0 : -1;
out:
	yaml_emitter_delete(&em);
	fclose(mem);
	/* the emitter leaves a flow collection at the end without its newline */
	if (rc == 0 && (fwrite(text, 1, len, out) != len ||
	    (len > 0 && text[len - 1] != '\n' && fputc('\n', out) == EOF)))
		rc = -1;
	free(text);
	return rc;
}

/*
 * gen_value - one value through yajl's generator; -1 when it refuses
 * (it stops at 128 levels), so the caller can fall back.
 */
static int
gen_value(yajl_gen g, yajl_val v)
{
	if (v == NULL || YAJL_IS_NULL(v))
		return yajl_gen_null(g) == yajl_gen_status_ok ? 0 : -1;
	if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v))
		return yajl_gen_bool(g, YAJL_IS_TRUE(v)) == yajl_gen_status_ok ? 0 : -1;
	if (YAJL_IS_NUMBER(v)) {
		if (v->u.number.r != NULL)
			return yajl_gen_number(g, v->u.number.r, strlen(v->u.number.r)) ==
			    yajl_gen_status_ok ? 0 : -1;
		return yajl_gen_integer(g, (long long)YAJL_GET_INTEGER(v)) ==
		    yajl_gen_status_ok ? 0 : -1;
	}
	if (YAJL_IS_STRING(v)) {
		const char *s = YAJL_GET_STRING(v);

		return yajl_gen_string(g, (const unsigned char *)s, strlen(s)) ==
		    yajl_gen_status_ok ? 0 : -1;
	}
	if (YAJL_IS_ARRAY(v)) {
		if (yajl_gen_array_open(g) != yajl_gen_status_ok)
			return -1;
		for (size_t i = 0; i < v->u.array.len; i++)
			if (gen_value(g, v->u.array.values[i]) < 0)
				return -1;
		return yajl_gen_array_close(g) == yajl_gen_status_ok ? 0 : -1;
	}
	if (yajl_gen_map_open(g) != yajl_gen_status_ok)
		return -1;
	for (size_t i = 0; i < v->u.object.len; i++) {
		const char *k = v->u.object.keys[i];

		if (yajl_gen_string(g, (const unsigned char *)k, strlen(k)) !=
		    yajl_gen_status_ok || gen_value(g, v->u.object.values[i]) < 0)
			return -1;
	}
	return yajl_gen_map_close(g) == yajl_gen_status_ok ? 0 : -1;
}

int
cli_print_json(FILE *out, yajl_val v)
{
	yajl_gen g = yajl_gen_alloc(NULL);
	const unsigned char *p;
	size_t len;
	int rc;

	yajl_gen_config(g, yajl_gen_beautify, 1);
	yajl_gen_config(g, yajl_gen_indent_string, "  ");
	if (gen_value(g, v) < 0) {
		/* deeper than yajl's generator goes: compact, still valid JSON */
		struct buf b;
		struct jw w;

		yajl_gen_free(g);
		buf_init(&b);
		jw_init(&w, &b);
		jw_value(&w, v);
		rc = fwrite(b.data, 1, b.len, out) == b.len && fputc('\n', out) != EOF ? 0 : -1;
		buf_free(&b);
		return rc;
	}
	yajl_gen_get_buf(g, &p, &len);
	while (len > 0 && p[len - 1] == '\n')
		len--;
	rc = fwrite(p, 1, len, out) == len && fputc('\n', out) != EOF ? 0 : -1;
	yajl_gen_free(g);
	return rc;
}

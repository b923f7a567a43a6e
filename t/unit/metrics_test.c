/*
 * metrics_test - the registry in Prometheus text format: HELP and TYPE
 * lines, unlabelled and labelled series, counters adding up, gauges set,
 * whole numbers printed without a fraction, and values read back.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/metrics.h"
#include "t/tap.h"

int
main(void)
{
	struct metrics *m = metrics_new();
	char *text;
	size_t len;

	metrics_define(m, "x_total", METRIC_COUNTER, "things done");
	metrics_define(m, "y", METRIC_GAUGE, "things now");
	metrics_define(m, "e_total", METRIC_COUNTER, "errors");
	metrics_define(m, "x_total", METRIC_GAUGE, "defined twice");
	text = metrics_render(m, &len);
	is_str(text, "# HELP x_total things done\n# TYPE x_total counter\nx_total 0\n"
	    "# HELP y things now\n# TYPE y gauge\ny 0\n"
	    "# HELP e_total errors\n# TYPE e_total counter\ne_total 0\n",
	    "families listed with zero before anything happened; a second define is a no-op");
	is_int((long long)len, (long long)strlen(text), "length");
	free(text);
	metrics_add(m, "x_total", NULL, 1);
	metrics_add(m, "x_total", NULL, 2);
	metrics_set(m, "y", NULL, 7);
	metrics_set(m, "y", NULL, 5);
	metrics_add(m, "e_total", "operation=\"upsert\"", 1);
	metrics_add(m, "e_total", "operation=\"delete\"", 2);
	metrics_add(m, "e_total", "operation=\"upsert\"", 1);
	metrics_set(m, "y", NULL, 0.5);
	text = metrics_render(m, NULL);
	is_str(text, "# HELP x_total things done\n# TYPE x_total counter\nx_total 3\n"
	    "# HELP y things now\n# TYPE y gauge\ny 0.5\n"
	    "# HELP e_total errors\n# TYPE e_total counter\n"
	    "e_total{operation=\"upsert\"} 2\ne_total{operation=\"delete\"} 2\n",
	    "counters add, gauges set, labelled series each on a line");
	free(text);
	ok(metrics_value(m, "x_total", NULL) == 3, "value read back");
	ok(metrics_value(m, "e_total", "operation=\"delete\"") == 2, "labelled value read back");
	ok(metrics_value(m, "e_total", "operation=\"check\"") == 0, "unknown series is 0");
	ok(metrics_value(m, "nope", NULL) == 0, "unknown family is 0");
	metrics_free(m);
	metrics_free(NULL);
	ok(1, "freed; NULL is a no-op");
	return done_testing();
}

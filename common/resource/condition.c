/*
 * condition - the table of condition types and reasons (condition.h) as
 * data: what the status writers in resource_status.c check each reason
 * against.
 */
#include "config.h"

#include <string.h>

#include "common/condition.h"

#define ROW(type, reason, status, stage, meaning) { type, reason, status, stage, meaning },

static const struct condition_row rows[] = {
	DECOD_CONDITIONS(ROW)
	{ NULL, NULL, NULL, NULL, NULL }
};

const struct condition_row *
condition_rows(void)
{
	return rows;
}

int
condition_known(const char *type, const char *reason)
{
	for (const struct condition_row *r = rows; r->type != NULL; r++)
		if (strcmp(r->type, type) == 0 && strcmp(r->reason, reason) == 0)
			return 1;
	return 0;
}

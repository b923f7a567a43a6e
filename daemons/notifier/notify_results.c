/*
 * notify_results - what a job's replicas came to: counts, each replica's
 * target and result, the summary and the failures named for a message.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "daemons/notifier/notify_engine.h"
#include "daemons/notifier/notify_engine_int.h"

size_t
notify_job_count(const struct notify_job *job)
{
	return job->n;
}

const struct notify_target *
notify_job_target(const struct notify_job *job, size_t i)
{
	return i < job->n ? &job->reps[i].t : NULL;
}

/*
 * notify_job_result - replica i's result, copied into one of a few slots
 * (a replica keeps its result compact): valid until four more calls
 */
const struct notify_result *
notify_job_result(const struct notify_job *job, size_t i)
{
	static struct notify_result slot[4];
	static unsigned next;
	struct notify_result *out;
	const struct rep *rep;

	if (i >= job->n)
		return NULL;
	rep = &job->reps[i];
	out = &slot[next++ % 4];
	out->state = rep->r.state;
	out->http_status = rep->r.http_status;
	out->attempts = rep->r.attempts;
	out->ms = rep->r.ms;
	snprintf(out->error, sizeof(out->error), "%s", rep->r.error ? rep->r.error : "");
	return out;
}

size_t
notify_job_progress(const struct notify_job *job)
{
	return job->finished;
}

void
notify_job_summary(const struct notify_job *job, struct notify_summary *s)
{
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < job->n; i++) {
		switch (job->reps[i].r.state) {
		case NOTIFY_CONFIRMED: s->confirmed++; break;
		case NOTIFY_FAILED: s->failed++; break;
		case NOTIFY_GONE: s->gone++; break;
		case NOTIFY_MISSING_TOKEN: s->missing_token++; break;
		default: s->pending++; break;
		}
	}
	s->ms = job->last_outcome - job->start;
}

char *
notify_job_failures(const struct notify_job *job, size_t max)
{
	struct buf b;
	size_t shown = 0, total = 0;

	buf_init(&b);
	for (size_t i = 0; i < job->n; i++) {
		const struct rep *rep = &job->reps[i];

		if (rep->r.state != NOTIFY_FAILED && rep->r.state != NOTIFY_MISSING_TOKEN)
			continue;
		total++;
		if (shown == max)
			continue;
		buf_printf(&b, "%s%s (%s)", shown ? ", " : "", rep->t.id,
		    rep->r.error ? rep->r.error : "");
		shown++;
	}
	if (total > shown)
		buf_printf(&b, " and %zu more", total - shown);
	return buf_steal(&b, NULL);
}

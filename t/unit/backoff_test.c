/* backoff_test - pauses double from the floor to the cap, jitter stays within +-20% */
#include "config.h"

#include "common/backoff.h"
#include "t/tap.h"

int
main(void)
{
	static const struct {
		const char *label;
		int64_t min, max;
		int64_t want[7];	/* the unjittered pauses of 7 failures in a row */
	} rows[] = {
		{ "1 s doubling to 30 s", 1000, 30000,
		    { 1000, 2000, 4000, 8000, 16000, 30000, 30000 } },
		{ "100 ms doubling to 5 s", 100, 5000, { 100, 200, 400, 800, 1600, 3200, 5000 } },
		{ "a cap under the floor is the floor", 500, 10, { 500, 500, 500, 500, 500, 500,
		    500 } },
	};
	struct backoff b;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int good = 1;

		backoff_init(&b, rows[i].min, rows[i].max);
		for (int k = 0; k < 7; k++) {
			int64_t base = backoff_peek(&b), got = backoff_next(&b);

			if (base != rows[i].want[k] || got < base * 8 / 10 ||
			    got > base * 12 / 10) {
				diag("failure %d: base %lld, pause %lld", k + 1, (long long)base,
				    (long long)got);
				good = 0;
			}
		}
		ok(good, "%s", rows[i].label);
	}
	backoff_init(&b, 1000, 30000);
	for (int k = 0; k < 5; k++)
		(void)backoff_next(&b);
	backoff_reset(&b);
	is_int(backoff_peek(&b), 1000, "a success goes back to the floor");
	{
		int64_t lo = 1000000, hi = 0;

		for (int k = 0; k < 2000; k++) {
			int64_t j = backoff_jitter(10000);

			lo = j < lo ? j : lo;
			hi = j > hi ? j : hi;
		}
		ok(lo >= 8000 && hi <= 12000, "jitter of 10 s stays within 8..12 s (%lld..%lld)",
		    (long long)lo, (long long)hi);
		ok(hi - lo > 2000, "and is scattered (2,000 draws span %lld ms)",
		    (long long)(hi - lo));
	}
	is_int(backoff_jitter(0), 0, "no pause stays no pause");
	return done_testing();
}

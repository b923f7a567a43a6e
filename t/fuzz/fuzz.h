/*
 * fuzz.h - what every harness in t/fuzz/ defines: libFuzzer's entry point.
 * Each fuzz_<target>.c is built twice: with clang -fsanitize=fuzzer by
 * `make fuzz` (t/fuzz/build.sh), and with the normal compiler against
 * replay.c, so `make check` replays the seeds and every regression input.
 */
#ifndef DECOD_FUZZ_H
#define DECOD_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* LLVMFuzzerTestOneInput - run one input; 0 always (a bug aborts) */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* fuzz_check - abort with a message when an invariant does not hold */
#define fuzz_check(cond, what) do { \
	if (!(cond)) { \
		fprintf(stderr, "fuzz invariant broken: %s (%s:%d)\n", what, __FILE__, __LINE__); \
		abort(); \
	} \
} while (0)

#endif

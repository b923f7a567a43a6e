# t/: TAP tests.  Unit tests are t/unit/<module>_test.c (one per module);
# integration tests are t/integration/<scenario>.sh, each starting real
# processes in a temporary folder and cleaning up by PID.
TEST_LIBS = $(DECOD_LIBS)

EXTRA_DIST += t/tap.h t/lib/common.sh t/summary.sh

# unit tests: add the program to check_PROGRAMS and TESTS
check_PROGRAMS += t/unit/util_test t/unit/log_test t/unit/hash_test t/unit/json_test
t_unit_util_test_LDADD = $(TEST_LIBS)
t_unit_log_test_LDADD = $(TEST_LIBS)
t_unit_hash_test_LDADD = $(TEST_LIBS)
t_unit_json_test_LDADD = $(TEST_LIBS)
TESTS += t/unit/util_test t/unit/log_test t/unit/hash_test t/unit/json_test

# the test stage and a control-socket client, for the supervisor tests
check_PROGRAMS += t/stage/teststage t/stage/ctlreq
t_stage_teststage_LDADD = $(TEST_LIBS)
t_stage_ctlreq_LDADD = $(NNG_LIBS)

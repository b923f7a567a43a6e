# t/store.mk: store tests.  store_contract is the backend-neutral suite: it
# runs on DECOD_TEST_STORE (e.g. etcd:http://127.0.0.1:2379) or, unset, on
# local: in a new temporary folder.
check_PROGRAMS += t/unit/store_keys_test t/unit/store_local_test t/unit/store_contract
t_unit_store_keys_test_LDADD = $(TEST_LIBS)
t_unit_store_local_test_LDADD = $(TEST_LIBS)
t_unit_store_contract_LDADD = $(TEST_LIBS)
TESTS += t/unit/store_keys_test t/unit/store_local_test t/unit/store_contract
# the contract suite polling, and two processes sharing one local store
TESTS += t/integration/store_contract_local.sh
EXTRA_DIST += t/integration/store_contract_local.sh
# store_watch_attach: the watch glue on a real stage loop
check_PROGRAMS += t/unit/stage_watch_test
t_unit_stage_watch_test_LDADD = $(TEST_LIBS)
TESTS += t/unit/stage_watch_test
# the loop's timer heap (common/stage/stage_timer.c)
check_PROGRAMS += t/unit/stage_timer_test
t_unit_stage_timer_test_LDADD = $(TEST_LIBS)
TESTS += t/unit/stage_timer_test

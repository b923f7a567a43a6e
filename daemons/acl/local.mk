# daemons/acl: build fragment (included by the top Makefile.am)
# The acl stage: a Valkey ACL user per tenant on every node (SPEC §4.6).
ACL_CORE_SRC = daemons/acl/acl_cmd.c daemons/acl/acl_cmd.h \
	daemons/acl/acl_cred.c daemons/acl/acl_cred.h
ACL_IO_SRC = daemons/acl/acl_redis.c daemons/acl/acl_redis.h \
	daemons/acl/acl_sentinel.c daemons/acl/acl_sentinel.h \
	daemons/acl/acl_store.c daemons/acl/acl_kube.c daemons/acl/acl.h \
	daemons/acl/acl_round.c daemons/acl/acl_trigger.c daemons/acl/acl_impl.h

decodlibexec_PROGRAMS += daemons/acl/acl
daemons_acl_acl_SOURCES = daemons/acl/acl.c $(ACL_CORE_SRC) $(ACL_IO_SRC)
daemons_acl_acl_LDADD = $(DECOD_LIBS) $(HIREDIS_LIBS) $(MHD_LIBS)

check_PROGRAMS += t/unit/acl_cmd_test t/unit/acl_cred_test t/unit/metrics_test
t_unit_acl_cmd_test_SOURCES = t/unit/acl_cmd_test.c $(ACL_CORE_SRC)
t_unit_acl_cmd_test_LDADD = $(DECOD_LIBS)
t_unit_acl_cred_test_SOURCES = t/unit/acl_cred_test.c $(ACL_CORE_SRC)
t_unit_acl_cred_test_LDADD = $(DECOD_LIBS)
t_unit_metrics_test_LDADD = $(DECOD_LIBS) -lpthread
TESTS += t/unit/acl_cmd_test t/unit/acl_cred_test t/unit/metrics_test

TESTS += t/integration/acl_stage.sh t/integration/acl_failover.sh t/integration/acl_kube.sh
EXTRA_DIST += t/integration/acl_stage.sh t/integration/acl_failover.sh t/integration/acl_kube.sh t/lib/valkey.sh
TESTS += t/integration/acl_backoff.sh t/integration/acl_names.sh t/integration/acl_big_reply.sh
EXTRA_DIST += t/integration/acl_backoff.sh t/integration/acl_names.sh t/lib/acl.sh \
	t/integration/acl_big_reply.sh t/stand-in/bignode.py

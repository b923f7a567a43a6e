# daemons/webhook: build fragment (included by the top Makefile.am)
# The admission webhook stage: webhook.c (HTTP and the stage's life),
# webhook_conn (the connections) and webhook_store (the index fed from the
# store, the records written back) make the program; the parts the unit
# tests link are built into libwebhook.a: webhook_admit (the review read
# whole, the answer, the validating decisions) and webhook_mutate (the
# injection's JSONPatch), no I/O, sharing webhook_admit_int.h;
# webhook_index (the in-memory Decofiles and Services), webhook_tls
# (certificate pairs handed to GnuTLS per handshake).
noinst_LIBRARIES += daemons/webhook/libwebhook.a
daemons_webhook_libwebhook_a_SOURCES = \
	daemons/webhook/webhook_admit.c daemons/webhook/webhook_admit.h \
	daemons/webhook/webhook_mutate.c daemons/webhook/webhook_admit_int.h \
	daemons/webhook/webhook_index.c daemons/webhook/webhook_index.h \
	daemons/webhook/webhook_tls.c daemons/webhook/webhook_tls.h
WEBHOOK_LIBS = daemons/webhook/libwebhook.a

decodlibexec_PROGRAMS += daemons/webhook/webhook
daemons_webhook_webhook_SOURCES = daemons/webhook/webhook.c \
	daemons/webhook/webhook_conn.c daemons/webhook/webhook_conn.h \
	daemons/webhook/webhook_store.c daemons/webhook/webhook_store.h
daemons_webhook_webhook_LDADD = $(WEBHOOK_LIBS) $(DECOD_LIBS) $(MHD_LIBS) $(GNUTLS_LIBS)

check_PROGRAMS += t/unit/webhook_admit_test
t_unit_webhook_admit_test_SOURCES = t/unit/webhook_admit_test.c t/unit/jsonpatch.c \
	t/unit/jsonpatch.h
t_unit_webhook_admit_test_LDADD = $(WEBHOOK_LIBS) $(DECOD_LIBS)
TESTS += t/unit/webhook_admit_test
check_PROGRAMS += t/unit/webhook_index_test
t_unit_webhook_index_test_LDADD = $(WEBHOOK_LIBS) $(DECOD_LIBS)
TESTS += t/unit/webhook_index_test

TESTS += t/integration/webhook_tls.sh t/integration/webhook_kube.sh \
	t/integration/webhook_etcd.sh t/integration/webhook_hostile.sh
EXTRA_DIST += t/integration/webhook_tls.sh t/integration/webhook_kube.sh \
	t/integration/webhook_etcd.sh t/integration/webhook_hostile.sh \
	t/fuzz/seeds/webhook-wire \
	t/integration/webhook_lib.sh t/knative-service-crd.yaml

# the admission fuzz harness, replayed over its seeds and regression inputs
# by `make check` (t/fuzz/replay.c; with libFuzzer: see t/fuzz/fuzz_admit.c)
check_PROGRAMS += t/fuzz/fuzz_admit_replay
t_fuzz_fuzz_admit_replay_SOURCES = t/fuzz/fuzz_admit.c t/fuzz/replay.c t/fuzz/fuzz.h \
	t/unit/jsonpatch.c t/unit/jsonpatch.h
t_fuzz_fuzz_admit_replay_LDADD = $(WEBHOOK_LIBS) $(DECOD_LIBS)
TESTS += t/integration/webhook_fuzz_replay.sh
EXTRA_DIST += t/integration/webhook_fuzz_replay.sh t/fuzz/seeds/admit

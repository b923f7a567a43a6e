# daemons/notifier: build fragment (included by the top Makefile.am)
# The notify engine (notify_engine.c) is compiled into each program that
# uses it: the notifier, its tests and the notify benchmark.
NOTIFY_ENGINE_SRC = daemons/notifier/notify_engine.c daemons/notifier/notify_engine.h \
	daemons/notifier/notify_engine_int.h daemons/notifier/notify_results.c

check_PROGRAMS += t/unit/notify_engine_test
t_unit_notify_engine_test_SOURCES = t/unit/notify_engine_test.c $(NOTIFY_ENGINE_SRC)
t_unit_notify_engine_test_LDADD = $(DECOD_LIBS)
TESTS += t/unit/notify_engine_test

# the notifier stage
decodlibexec_PROGRAMS += daemons/notifier/notifier
daemons_notifier_notifier_SOURCES = daemons/notifier/notifier.c $(NOTIFY_ENGINE_SRC) \
	daemons/notifier/notify_pods.c daemons/notifier/notify_pods.h
daemons_notifier_notifier_LDADD = $(DECOD_LIBS)

TESTS += t/integration/notify_stage.sh
EXTRA_DIST += t/integration/notify_stage.sh


# pod discovery (notify_pods.c): its pure part, and against a real API server
check_PROGRAMS += t/unit/notify_pods_test
t_unit_notify_pods_test_SOURCES = t/unit/notify_pods_test.c daemons/notifier/notify_pods.c \
	daemons/notifier/notify_pods.h
t_unit_notify_pods_test_LDADD = $(DECOD_LIBS)
TESTS += t/unit/notify_pods_test t/integration/notify_pods.sh
EXTRA_DIST += t/integration/notify_pods.sh

# daemons/publisher: build fragment (included by the top Makefile.am)
# The publisher stage (publisher.c) and its targets (publish_<target>.c,
# built into libpublish.a so unit tests link them); tests in
# t/unit/publish_*_test.c and t/integration/publish_*.sh.
noinst_LIBRARIES += daemons/publisher/libpublish.a
daemons_publisher_libpublish_a_SOURCES = \
	daemons/publisher/publish_file.c daemons/publisher/publish_file.h \
	daemons/publisher/publish_configmap.c daemons/publisher/publish_configmap.h
PUBLISH_LIBS = daemons/publisher/libpublish.a

decodlibexec_PROGRAMS += daemons/publisher/publisher
daemons_publisher_publisher_SOURCES = daemons/publisher/publisher.c \
	daemons/publisher/publisher.h daemons/publisher/publish_drift.c
daemons_publisher_publisher_LDADD = $(PUBLISH_LIBS) $(DECOD_LIBS)

check_PROGRAMS += t/unit/publish_file_test
t_unit_publish_file_test_LDADD = $(PUBLISH_LIBS) $(DECOD_LIBS)
TESTS += t/unit/publish_file_test


TESTS += t/integration/publish_stage.sh
EXTRA_DIST += t/integration/publish_stage.sh

# the configmap target against a real API server (t/lib/kube.sh)
check_PROGRAMS += t/unit/publish_configmap_test
t_unit_publish_configmap_test_LDADD = $(PUBLISH_LIBS) $(DECOD_LIBS)
TESTS += t/unit/publish_configmap_test t/integration/publish_configmap.sh
EXTRA_DIST += t/integration/publish_configmap.sh

# daemons/publisher: build fragment (included by the top Makefile.am)
# The publisher stage (publisher.c, the dispatcher) and its targets
# (publish_<target>*.c behind publish_target.h, with publish_record.c and
# objtab.c, built into libpublish.a so unit tests link them); tests in
# t/unit/publish_*_test.c, t/unit/objtab_test.c and t/integration/publish_*.sh.
noinst_LIBRARIES += daemons/publisher/libpublish.a
daemons_publisher_libpublish_a_SOURCES = \
	daemons/publisher/publish_file.c daemons/publisher/publish_file.h \
	daemons/publisher/sigv4.c daemons/publisher/sigv4.h \
	daemons/publisher/s3.c daemons/publisher/s3.h \
	daemons/publisher/publish_s3.c daemons/publisher/publish_s3.h \
	daemons/publisher/publish_s3_obj.c daemons/publisher/publish_target.h \
	daemons/publisher/publish_configmap.c daemons/publisher/publish_configmap.h \
	daemons/publisher/publish_configmap_write.c daemons/publisher/publish_configmap_int.h \
	daemons/publisher/publish_file_target.c daemons/publisher/publish_file_drift.c \
	daemons/publisher/publish_file_int.h daemons/publisher/publish_record.c \
	daemons/publisher/publish_record.h daemons/publisher/objtab.c daemons/publisher/objtab.h \
	daemons/publisher/publish_file_swap.c daemons/publisher/publish_configmap_swap.c
PUBLISH_LIBS = daemons/publisher/libpublish.a

decodlibexec_PROGRAMS += daemons/publisher/publisher
daemons_publisher_publisher_SOURCES = daemons/publisher/publisher.c
daemons_publisher_publisher_LDADD = $(PUBLISH_LIBS) $(DECOD_LIBS)

check_PROGRAMS += t/unit/publish_file_test t/unit/objtab_test t/unit/publish_record_test
t_unit_publish_file_test_LDADD = $(PUBLISH_LIBS) $(DECOD_LIBS)
t_unit_objtab_test_LDADD = $(PUBLISH_LIBS) $(DECOD_LIBS)
t_unit_publish_record_test_LDADD = $(PUBLISH_LIBS) $(DECOD_LIBS)
TESTS += t/unit/publish_file_test t/unit/objtab_test t/unit/publish_record_test


TESTS += t/integration/publish_stage.sh
EXTRA_DIST += t/integration/publish_stage.sh

check_PROGRAMS += t/unit/sigv4_test t/unit/s3_test
t_unit_sigv4_test_LDADD = $(PUBLISH_LIBS) $(DECOD_LIBS)
t_unit_s3_test_LDADD = $(PUBLISH_LIBS) $(DECOD_LIBS)
TESTS += t/unit/sigv4_test t/unit/s3_test
TESTS += t/integration/publish_s3.sh
EXTRA_DIST += t/integration/publish_s3.sh t/stand-in/s3/package.json \
	t/stand-in/s3/package-lock.json t/stand-in/s3/setup.sh \
	t/stand-in/s3/s3-stand-in.js t/stand-in/s3/s3-client.js

# the configmap target against a real API server (t/lib/kube.sh)
check_PROGRAMS += t/unit/publish_configmap_test
t_unit_publish_configmap_test_LDADD = $(PUBLISH_LIBS) $(DECOD_LIBS)
TESTS += t/unit/publish_configmap_test t/integration/publish_configmap.sh
EXTRA_DIST += t/integration/publish_configmap.sh

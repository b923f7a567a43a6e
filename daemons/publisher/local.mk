# daemons/publisher: build fragment (included by the top Makefile.am)
# The publisher stage and its targets (publish_<target>.c); tests in
# t/unit/publish_*_test.c and t/integration/publish_*.sh.
PUBLISHER_SRC = daemons/publisher/publish_file.c daemons/publisher/publish_file.h

check_PROGRAMS += t/unit/publish_file_test
t_unit_publish_file_test_SOURCES = t/unit/publish_file_test.c $(PUBLISHER_SRC)
t_unit_publish_file_test_LDADD = $(DECOD_LIBS)
TESTS += t/unit/publish_file_test

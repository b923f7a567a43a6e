# daemons/fetcher: build fragment (included by the top Makefile.am)
# libfetch.a holds the key rules and the sources (inline, dir, git), shared
# by the stage and its unit tests.
noinst_LIBRARIES += daemons/fetcher/libfetch.a
daemons_fetcher_libfetch_a_SOURCES = \
	daemons/fetcher/fetch_keys.c daemons/fetcher/fetch_keys.h
FETCH_LIBS = daemons/fetcher/libfetch.a

check_PROGRAMS += t/unit/fetch_keys_test
t_unit_fetch_keys_test_LDADD = $(FETCH_LIBS) $(DECOD_LIBS)
TESTS += t/unit/fetch_keys_test

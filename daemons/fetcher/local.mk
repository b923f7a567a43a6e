# daemons/fetcher: build fragment (included by the top Makefile.am)
# libfetch.a holds the key rules and the sources (inline, dir, git), shared
# by the stage and its unit tests.
noinst_LIBRARIES += daemons/fetcher/libfetch.a
daemons_fetcher_libfetch_a_SOURCES = \
	daemons/fetcher/fetch_keys.c daemons/fetcher/fetch_keys.h \
	daemons/fetcher/fetch_tree.c daemons/fetcher/fetch_tree.h \
	daemons/fetcher/fetch_inline.c daemons/fetcher/fetch_inline.h \
	daemons/fetcher/fetch_dir.c daemons/fetcher/fetch_dir.h \
	daemons/fetcher/fetch_run.c daemons/fetcher/fetch_run.h \
	daemons/fetcher/fetch_git.c daemons/fetcher/fetch_git.h \
	daemons/fetcher/fetch_kube.c daemons/fetcher/fetch_kube.h
FETCH_LIBS = daemons/fetcher/libfetch.a

decodlibexec_PROGRAMS += daemons/fetcher/fetcher
daemons_fetcher_fetcher_SOURCES = daemons/fetcher/fetcher.c daemons/fetcher/fetcher.h \
	daemons/fetcher/fetch_status.c \
	daemons/fetcher/fetch_lock.c daemons/fetcher/fetch_lock.h
daemons_fetcher_fetcher_LDADD = $(FETCH_LIBS) $(DECOD_LIBS) -lpthread

check_PROGRAMS += t/unit/fetch_keys_test t/unit/fetch_dir_test t/unit/fetch_inline_test \
	t/unit/fetch_git_test
t_unit_fetch_keys_test_LDADD = $(FETCH_LIBS) $(DECOD_LIBS)
t_unit_fetch_dir_test_LDADD = $(FETCH_LIBS) $(DECOD_LIBS)
t_unit_fetch_inline_test_LDADD = $(FETCH_LIBS) $(DECOD_LIBS)
t_unit_fetch_git_test_LDADD = $(FETCH_LIBS) $(DECOD_LIBS)
TESTS += t/unit/fetch_keys_test t/unit/fetch_dir_test t/unit/fetch_inline_test \
	t/unit/fetch_git_test


EXTRA_DIST += t/lib/git.sh
TESTS += t/integration/fetch_stage.sh t/integration/fetch_git.sh

# Decofile CRs as a front door, against a real API server (t/lib/kube.sh)
check_PROGRAMS += t/unit/fetch_kube_test
t_unit_fetch_kube_test_LDADD = $(FETCH_LIBS) $(DECOD_LIBS)
TESTS += t/unit/fetch_kube_test t/integration/fetch_kube.sh
EXTRA_DIST += t/integration/fetch_kube.sh

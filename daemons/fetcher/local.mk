# daemons/fetcher: build fragment (included by the top Makefile.am)
# libfetch.a holds the key rules and the sources (inline, dir, git, github,
# oci, with the HTTP client and the archive reader they share), shared
# by the stage and its unit tests.  Not libarchive: archive_lazy.c loads it
# on the first archive read (an idle fetcher never maps it), so only the
# archive test, which writes archives itself, links -larchive.
noinst_LIBRARIES += daemons/fetcher/libfetch.a
daemons_fetcher_libfetch_a_SOURCES = \
	daemons/fetcher/fetch_keys.c daemons/fetcher/fetch_keys.h \
	daemons/fetcher/fetch_tree.c daemons/fetcher/fetch_tree.h \
	daemons/fetcher/fetch_inline.c daemons/fetcher/fetch_inline.h \
	daemons/fetcher/fetch_dir.c daemons/fetcher/fetch_dir.h \
	daemons/fetcher/fetch_run.c daemons/fetcher/fetch_run.h \
	daemons/fetcher/fetch_git.c daemons/fetcher/fetch_git.h \
	daemons/fetcher/fetch_http.c daemons/fetcher/fetch_http.h \
	daemons/fetcher/fetch_inotify.c daemons/fetcher/fetch_inotify.h \
	daemons/fetcher/fetch_secret.c daemons/fetcher/fetch_secret.h \
	daemons/fetcher/fetch_poll.c daemons/fetcher/fetch_poll.h \
	daemons/fetcher/fetch_archive.c daemons/fetcher/fetch_archive.h \
	daemons/fetcher/archive_lazy.c daemons/fetcher/archive_lazy.h \
	daemons/fetcher/fetch_github.c daemons/fetcher/fetch_github.h \
	daemons/fetcher/fetch_oci.c daemons/fetcher/fetch_oci.h \
	daemons/fetcher/fetch_oci_layers.c daemons/fetcher/fetch_oci_int.h
# the Kubernetes front door (daemons/kube/) runs in the fetcher's loop
FETCH_LIBS = daemons/fetcher/libfetch.a $(KUBE_FRONT_LIBS)

decodlibexec_PROGRAMS += daemons/fetcher/fetcher
daemons_fetcher_fetcher_SOURCES = daemons/fetcher/fetcher.c daemons/fetcher/fetcher.h \
	daemons/fetcher/fetch_worker.c daemons/fetcher/fetch_watch.c \
	daemons/fetcher/fetch_status.c daemons/fetcher/fetch_hold.c \
	daemons/fetcher/fetch_lock.c daemons/fetcher/fetch_lock.h \
	daemons/fetcher/fetch_schedule.c daemons/fetcher/fetch_tpl.c
daemons_fetcher_fetcher_LDADD = $(FETCH_LIBS) $(DECOD_LIBS) -lpthread

check_PROGRAMS += t/unit/fetch_keys_test t/unit/fetch_dir_test t/unit/fetch_inline_test \
	t/unit/fetch_git_test t/unit/fetch_archive_test
t_unit_fetch_keys_test_LDADD = $(FETCH_LIBS) $(DECOD_LIBS)
t_unit_fetch_dir_test_LDADD = $(FETCH_LIBS) $(DECOD_LIBS)
t_unit_fetch_inline_test_LDADD = $(FETCH_LIBS) $(DECOD_LIBS)
t_unit_fetch_git_test_LDADD = $(FETCH_LIBS) $(DECOD_LIBS)
t_unit_fetch_archive_test_LDADD = $(FETCH_LIBS) $(DECOD_LIBS) $(ARCHIVE_LIBS)
TESTS += t/unit/fetch_keys_test t/unit/fetch_dir_test t/unit/fetch_inline_test \
	t/unit/fetch_git_test t/unit/fetch_archive_test


EXTRA_DIST += t/lib/git.sh t/lib/github.sh t/lib/hostile_zip.py t/stand-in/github.py \
	t/lib/registry.sh t/lib/oci.py t/stand-in/token_server.py t/lib/blackhole.py
TESTS += t/integration/fetch_stage.sh t/integration/fetch_git.sh t/integration/fetch_github.sh \
	t/integration/fetch_oci.sh t/integration/fetch_hung_remote.sh t/integration/github_publish.sh
# block names from outside: UTF-8 from every source, the rest refused (issue 24)
TESTS += t/integration/fetch_names.sh
EXTRA_DIST += t/integration/fetch_names.sh
TESTS += t/integration/fetch_inotify.sh
EXTRA_DIST += t/integration/fetch_inotify.sh

# the archive fuzz harness, replayed over its seeds and regression inputs by
# `make check` (t/fuzz/replay.c; with libFuzzer: make fuzz)
check_PROGRAMS += t/fuzz/fuzz_archive_replay
t_fuzz_fuzz_archive_replay_SOURCES = t/fuzz/fuzz_archive.c t/fuzz/replay.c t/fuzz/fuzz.h
t_fuzz_fuzz_archive_replay_LDADD = $(FETCH_LIBS) $(DECOD_LIBS)
TESTS += t/integration/fetch_fuzz_replay.sh
EXTRA_DIST += t/integration/fetch_fuzz_replay.sh t/fuzz/seeds/archive t/fuzz/regress/archive

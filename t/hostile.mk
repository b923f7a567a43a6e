# t/hostile.mk: hostile input and faults (issue 13): the tests that feed
# decod what an attacker or a crash would, and the fuzz harnesses of
# t/fuzz/ built two ways: with the normal compiler against t/fuzz/replay.c
# (make check replays every seed and regression input), and with clang's
# libFuzzer by `make fuzz` (skipped when configure found no such clang).
TESTS += t/integration/hostile_depth.sh t/integration/hostile_apply.sh \
	t/integration/hostile_replica.sh t/integration/secrets.sh t/fuzz/replay.sh \
	t/integration/nonroot.sh
EXTRA_DIST += t/integration/hostile_depth.sh t/integration/hostile_apply.sh \
	t/integration/hostile_replica.sh t/integration/secrets.sh t/lib/git_http.py \
	t/integration/nonroot.sh t/hostile.mk t/fuzz/replay.sh \
	t/fuzz/build.sh t/fuzz/run.sh t/fuzz/seeds t/fuzz/regress

# admit: the webhook's harness (its replay is in daemons/webhook/local.mk);
# archive: the fetcher's (daemons/fetcher/local.mk)
FUZZ_TARGETS = json render apply proto manifest store etcd site conf admit archive kube
FUZZ_REPLAY = t/fuzz/fuzz_json_replay t/fuzz/fuzz_render_replay \
	t/fuzz/fuzz_apply_replay t/fuzz/fuzz_proto_replay t/fuzz/fuzz_manifest_replay \
	t/fuzz/fuzz_store_replay t/fuzz/fuzz_etcd_replay t/fuzz/fuzz_site_replay \
	t/fuzz/fuzz_conf_replay t/fuzz/fuzz_kube_replay
check_PROGRAMS += $(FUZZ_REPLAY)
FUZZ_COMMON = t/fuzz/replay.c t/fuzz/fuzz.h
t_fuzz_fuzz_json_replay_SOURCES = t/fuzz/fuzz_json.c $(FUZZ_COMMON)
t_fuzz_fuzz_json_replay_LDADD = $(DECOD_LIBS)
t_fuzz_fuzz_render_replay_SOURCES = t/fuzz/fuzz_render.c $(FUZZ_COMMON)
t_fuzz_fuzz_render_replay_LDADD = $(RENDER_LIBS) $(DECOD_LIBS)
t_fuzz_fuzz_apply_replay_SOURCES = t/fuzz/fuzz_apply.c cli/cli_print.c $(FUZZ_COMMON)
t_fuzz_fuzz_apply_replay_LDADD = $(DECOD_LIBS) $(YAML_LIBS)
t_fuzz_fuzz_proto_replay_SOURCES = t/fuzz/fuzz_proto.c $(FUZZ_COMMON)
t_fuzz_fuzz_proto_replay_LDADD = $(DECOD_LIBS)
t_fuzz_fuzz_manifest_replay_SOURCES = t/fuzz/fuzz_manifest.c $(FUZZ_COMMON)
t_fuzz_fuzz_manifest_replay_LDADD = $(RENDER_LIBS) $(DECOD_LIBS)
t_fuzz_fuzz_store_replay_SOURCES = t/fuzz/fuzz_store.c $(FUZZ_COMMON)
t_fuzz_fuzz_store_replay_LDADD = $(DECOD_LIBS)
t_fuzz_fuzz_etcd_replay_SOURCES = t/fuzz/fuzz_etcd.c $(FUZZ_COMMON)
t_fuzz_fuzz_etcd_replay_LDADD = $(DECOD_LIBS)
t_fuzz_fuzz_site_replay_SOURCES = t/fuzz/fuzz_site.c examples/site/site_doc.c $(FUZZ_COMMON)
t_fuzz_fuzz_site_replay_LDADD = $(DECOD_LIBS) $(MHD_LIBS)
t_fuzz_fuzz_conf_replay_SOURCES = t/fuzz/fuzz_conf.c $(FUZZ_COMMON)
t_fuzz_fuzz_conf_replay_LDADD = $(DECOD_LIBS)
t_fuzz_fuzz_kube_replay_SOURCES = t/fuzz/fuzz_kube.c $(FUZZ_COMMON)
t_fuzz_fuzz_kube_replay_LDADD = $(DECOD_LIBS)

# make fuzz: the libFuzzer binaries in t/fuzz/bin/ (t/fuzz/run.sh runs them)
fuzz:
	@if test -z "$(FUZZ_CC)"; then \
		echo "fuzz: configure found no clang that links -fsanitize=fuzzer; skipped"; \
		exit 0; \
	fi; \
	FUZZ_CC='$(FUZZ_CC)' FUZZ_TARGETS='$(FUZZ_TARGETS)' \
	FUZZ_CFLAGS='$(CURL_CFLAGS) $(YAJL_CFLAGS) $(BROTLI_CFLAGS) $(MHD_CFLAGS) $(CRYPTO_CFLAGS) $(SQLITE_CFLAGS) $(YAML_CFLAGS) $(ARCHIVE_CFLAGS)' \
	FUZZ_LIBS='$(CURL_LIBS) $(YAJL_LIBS) $(BROTLI_LIBS) $(CRYPTO_LIBS) $(SQLITE_LIBS) $(NNG_LIBS) $(MHD_LIBS) $(YAML_LIBS) $(ARCHIVE_LIBS)' \
	FUZZ_DEFS='$(DEFS) -DDECOD_SYSCONFDIR="\"$(sysconfdir)\"" -DDECOD_LIBEXECDIR="\"$(libexecdir)/decod\"" -DDECOD_LOCALSTATEDIR="\"$(localstatedir)\"" -DDECOD_RUNSTATEDIR="\"$(runstatedir)\"" -DDECOD_DATADIR="\"$(pkgdatadir)\""' \
	$(SHELL) $(srcdir)/t/fuzz/build.sh '$(abs_top_srcdir)' '$(abs_top_builddir)'
.PHONY: fuzz

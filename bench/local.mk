# bench: build fragment (included by the top Makefile.am)
# Benchmarks are not part of `make check`; each has its own target.

# --- renderer benchmarks (bench/gen, bench/bench_render): `make bench-render`
noinst_PROGRAMS += bench/gen bench/bench_render
bench_gen_LDADD = $(DECOD_LIBS) -lm
bench_bench_render_LDADD = $(RENDER_LIBS) $(FETCH_LIBS) $(DECOD_LIBS)
EXTRA_DIST += bench/bench_render.sh bench/render_vs_jq.sh
bench-render: bench/gen bench/bench_render
	$(SHELL) $(srcdir)/bench/bench_render.sh $(abs_top_builddir)
.PHONY: bench-render
# --- end of renderer benchmarks
# notifier benchmarks
noinst_PROGRAMS += bench/replica bench/bench_notify
bench_replica_SOURCES = bench/replica.c
bench_bench_notify_SOURCES = bench/bench_notify.c $(NOTIFY_ENGINE_SRC)
bench_bench_notify_LDADD = $(DECOD_LIBS)
EXTRA_DIST += bench/bench_notify.sh
bench-notify: bench/replica bench/bench_notify
	$(SHELL) $(srcdir)/bench/bench_notify.sh $(abs_top_builddir)
.PHONY: bench-notify
# --- end of notifier benchmarks
# end-to-end rollout benchmark: `make bench-rollout`
EXTRA_DIST += bench/bench_rollout.sh
bench-rollout: decod decoctl bench/replica bench/gen
	$(SHELL) $(srcdir)/bench/bench_rollout.sh $(abs_top_builddir) 150 10 sample
	$(SHELL) $(srcdir)/bench/bench_rollout.sh $(abs_top_builddir) 150 5 4.2MB
.PHONY: bench-rollout
# renderer and publisher on 1,000 waiting items (batches): `make bench-batch`
EXTRA_DIST += bench/bench_batch.sh bench/fs_note.sh
bench-batch: decod decoctl daemons/fetcher/fetcher daemons/renderer/renderer daemons/publisher/publisher
	$(SHELL) $(srcdir)/bench/bench_batch.sh $(abs_top_builddir) 1000
.PHONY: bench-batch
# the fetcher alone on 1,000 Decofiles at a cold start: sync calls per item
EXTRA_DIST += bench/bench_fetch_batch.sh
bench-fetch-batch: decod decoctl daemons/fetcher/fetcher
	$(SHELL) $(srcdir)/bench/bench_fetch_batch.sh $(abs_top_builddir) 1000
.PHONY: bench-fetch-batch
# dir sources watched with inotify vs polled: `make bench-dir-watch`
EXTRA_DIST += bench/bench_dir_watch.sh
bench-dir-watch: decod decoctl
	$(SHELL) $(srcdir)/bench/bench_dir_watch.sh $(abs_top_builddir) 1000 300 20
.PHONY: bench-dir-watch
# scale-out benchmarks (real etcd on loopback; fetcher-only instances)
EXTRA_DIST += bench/bench_scaleout.sh bench/bench_scaleout.py
bench-scaleout: decod decoctl daemons/fetcher/fetcher
	$(SHELL) $(srcdir)/bench/bench_scaleout.sh $(abs_top_builddir)
.PHONY: bench-scaleout
# --- end of scale-out benchmarks
# decod in a cluster (real API server from KUBEBUILDER_ASSETS): `make bench-kube`
EXTRA_DIST += bench/bench_kube.sh bench/bench_kube.py
bench-kube: decod examples/site/decod-site
	$(SHELL) $(srcdir)/bench/bench_kube.sh $(abs_top_builddir) 40
.PHONY: bench-kube
# GitHub source benchmark (the stand-in, fetcher + renderer + publisher)
EXTRA_DIST += bench/bench_github.sh
bench-github: decod decoctl bench/gen daemons/fetcher/fetcher
	$(SHELL) $(srcdir)/bench/bench_github.sh $(abs_top_builddir)
.PHONY: bench-github
# --- end of GitHub source benchmark
# webhook benchmark: `make bench-webhook` (200 keep-alive HTTPS clients)
noinst_PROGRAMS += bench/bench_webhook
bench_bench_webhook_LDADD = $(DECOD_LIBS)
EXTRA_DIST += bench/bench_webhook.sh
bench-webhook: daemons/webhook/webhook bench/bench_webhook t/stage/testtool
	$(SHELL) $(srcdir)/bench/bench_webhook.sh $(abs_top_builddir)
.PHONY: bench-webhook
# --- end of webhook benchmark
# s3 target: drift re-check of 1,000 objects a minute (needs node and npm)
EXTRA_DIST += bench/bench_s3_drift.sh
bench-s3: daemons/publisher/publisher t/stage/testtool
	$(SHELL) $(srcdir)/bench/bench_s3_drift.sh $(abs_top_builddir)
.PHONY: bench-s3
# acl benchmark (real redis-server and redis-sentinel on loopback)
EXTRA_DIST += bench/bench_acl.sh
bench-acl: decoctl daemons/acl/acl
	$(SHELL) $(srcdir)/bench/bench_acl.sh $(abs_top_builddir)
.PHONY: bench-acl
# --- end of acl benchmark
# decod in a cluster at scale: `make bench-kube-scale` (10,000 CRs, restart,
# 1,000 pods), against the plain client bench/kube_ssa in the same run
noinst_PROGRAMS += bench/kube_ssa
bench_kube_ssa_SOURCES = bench/kube_ssa.c
bench_kube_ssa_LDADD = $(CURL_LIBS)
EXTRA_DIST += bench/bench_kube_scale.sh bench/bench_kube_scale.py
bench-kube-scale: decod bench/kube_ssa bench/replica
	$(SHELL) $(srcdir)/bench/bench_kube_scale.sh $(abs_top_builddir)
.PHONY: bench-kube-scale
# --- end of the cluster scale benchmarks

# idle memory and threads of every stage under the supervisor: `make bench-idle`
EXTRA_DIST += bench/bench_idle.sh
bench-idle: decod decoctl
	$(SHELL) $(srcdir)/bench/bench_idle.sh $(abs_top_builddir)
.PHONY: bench-idle

# best size without the wait: the background brotli pass (`make bench-recompress`)
EXTRA_DIST += bench/bench_recompress.sh
bench-recompress: bench/gen
	$(SHELL) $(srcdir)/bench/bench_recompress.sh $(abs_top_builddir)
.PHONY: bench-recompress

# web stage benchmark: `make bench-web` (10,000 decofiles: the page, first
# paint in chromium, SSE latency, push -> fetch, /metrics of a busy stage)
EXTRA_DIST += bench/bench_web.sh bench/web_paint.js
bench-web: decod decoctl daemons/fetcher/fetcher daemons/web/web t/stage/testtool
	$(SHELL) $(srcdir)/bench/bench_web.sh $(abs_top_builddir)
.PHONY: bench-web

# DecofileTemplate fan-out (issue 21): `make bench-template` (1,000 sites on
# one template, one edit with and without canary/waves, an unrelated site's
# edit -> confirmed beside it)
EXTRA_DIST += bench/bench_template.sh
bench-template: decod decoctl bench/replica daemons/fetcher/fetcher daemons/renderer/renderer daemons/publisher/publisher daemons/notifier/notifier
	$(SHELL) $(srcdir)/bench/bench_template.sh $(abs_top_builddir) 1000 20 5 20
.PHONY: bench-template

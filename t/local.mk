# t/: TAP tests.  Unit tests are t/unit/<module>_test.c (one per module);
# integration tests are t/integration/<scenario>.sh, each starting real
# processes in a temporary folder and cleaning up by PID.
TEST_LIBS = $(DECOD_LIBS)

EXTRA_DIST += t/tap.h t/lib/common.sh t/lib/pipeline.sh t/summary.sh

# the layers of common/ and proto/, from their #include lines
TESTS += t/unit/layers.sh
EXTRA_DIST += t/unit/layers.sh t/lib/layers.py

# unit tests: add the program to check_PROGRAMS and TESTS
check_PROGRAMS += t/unit/util_test t/unit/log_test t/unit/hash_test t/unit/json_test
t_unit_util_test_LDADD = $(TEST_LIBS)
t_unit_log_test_LDADD = $(TEST_LIBS)
t_unit_hash_test_LDADD = $(TEST_LIBS)
t_unit_json_test_LDADD = $(TEST_LIBS)
TESTS += t/unit/util_test t/unit/log_test t/unit/hash_test t/unit/json_test
# the one-pass check's 16-byte scans against a byte loop
check_PROGRAMS += t/unit/json_scan_test
t_unit_json_scan_test_LDADD = $(TEST_LIBS)
TESTS += t/unit/json_scan_test

# the test stage and a control-socket client, for the supervisor tests
check_PROGRAMS += t/stage/teststage t/stage/ctlreq
t_stage_teststage_LDADD = $(TEST_LIBS)
t_stage_ctlreq_LDADD = $(NNG_LIBS)

check_PROGRAMS += t/unit/conf_test t/unit/spool_test t/unit/proto_test t/unit/journal_test
t_unit_conf_test_LDADD = $(TEST_LIBS)
t_unit_spool_test_LDADD = $(TEST_LIBS)
t_unit_proto_test_LDADD = $(TEST_LIBS)
t_unit_journal_test_LDADD = $(TEST_LIBS)
# the versions rollback can go back to, and what the spool keeps of them
check_PROGRAMS += t/unit/journal_versions_test
t_unit_journal_versions_test_LDADD = $(TEST_LIBS)
TESTS += t/unit/journal_versions_test
TESTS += t/unit/conf_test t/unit/spool_test t/unit/proto_test t/unit/journal_test
# the man page and the sample config state the settings table's defaults
check_PROGRAMS += t/unit/conf_docs_test
t_unit_conf_docs_test_LDADD = $(TEST_LIBS)
t_unit_conf_docs_test_CPPFLAGS = $(AM_CPPFLAGS) -DDECOD_PREFIX='"$(prefix)"'
TESTS += t/unit/conf_docs_test

TESTS += t/integration/supervisor.sh
EXTRA_DIST += t/integration/supervisor.sh
TESTS += t/integration/housekeeping.sh
EXTRA_DIST += t/integration/housekeeping.sh
TESTS += t/integration/rollout.sh t/integration/brotli_recompress.sh t/integration/quarantine.sh
EXTRA_DIST += t/integration/rollout.sh t/integration/brotli_recompress.sh t/integration/quarantine.sh
# metrics on every daemon, read back through a real Prometheus; ports refused at start
TESTS += t/integration/metrics_prometheus.sh t/integration/metrics_bind.sh t/integration/metrics_alerts.sh
# a busy stage answers /metrics between its items, not after the pass
TESTS += t/integration/metrics_busy.sh
EXTRA_DIST += t/integration/metrics_busy.sh
EXTRA_DIST += t/integration/metrics_prometheus.sh t/integration/metrics_bind.sh t/integration/metrics_alerts.sh deploy/monitoring/decod-alerts.yaml \
	deploy/components/metrics/kustomization.yaml deploy/components/metrics/metrics-env.yaml \
	deploy/components/metrics/service.yaml deploy/components/metrics/servicemonitor.yaml \
	doc/metrics.md
TESTS += t/integration/readme.sh t/integration/demo.sh
EXTRA_DIST += t/integration/readme.sh t/lib/doc_paths.py t/integration/demo.sh
check_PROGRAMS += t/unit/resource_test
t_unit_resource_test_LDADD = $(TEST_LIBS)
TESTS += t/unit/resource_test
# resource.c's spec fields against deploy/'s CRDs and doc/sources.md
check_PROGRAMS += t/unit/resource_fields_test
t_unit_resource_fields_test_SOURCES = t/unit/resource_fields_test.c
t_unit_resource_fields_test_LDADD = $(TEST_LIBS) $(YAML_LIBS)
TESTS += t/unit/resource_fields_test
EXTRA_DIST += doc/sources.md

# the stages' integration tests share one driver (t/stage/testtool.c)
check_PROGRAMS += t/stage/testtool
t_stage_testtool_LDADD = $(TEST_LIBS)

check_PROGRAMS += t/unit/s3key_test
t_unit_s3key_test_LDADD = $(TEST_LIBS)
TESTS += t/unit/s3key_test
check_PROGRAMS += t/unit/backoff_test
t_unit_backoff_test_LDADD = $(TEST_LIBS)
TESTS += t/unit/backoff_test

# Kubernetes: the client's unit tests, and kubetool, which drives the client
# from the integration tests against a real API server (t/lib/kube.sh)
check_PROGRAMS += t/unit/kube_test t/kube/kubetool
t_unit_kube_test_LDADD = $(TEST_LIBS)
t_kube_kubetool_LDADD = $(TEST_LIBS)
TESTS += t/unit/kube_test
TESTS += t/integration/kube_client.sh
EXTRA_DIST += t/kube/faultproxy.py t/integration/kube_client.sh

# a real Kubernetes control plane (t/lib/kube.sh; KUBEBUILDER_ASSETS)
TESTS += t/integration/kube_harness.sh
EXTRA_DIST += t/integration/kube_harness.sh t/lib/kube.sh
# the stages' exec probe (--health), deploy/'s liveness and readiness
TESTS += t/integration/stage_health.sh
EXTRA_DIST += t/integration/stage_health.sh
# doc/runbook.md against common/resource/condition.h against every reason the code sets
TESTS += t/integration/runbook.sh
EXTRA_DIST += t/integration/runbook.sh t/lib/condition_scan.py doc/runbook.md
# deploy/ as CI applies it (server-side, strict) and its RBAC as decod's account
TESTS += t/integration/deploy_apply.sh
EXTRA_DIST += t/integration/deploy_apply.sh
EXTRA_DIST += deploy/components/persistent-state/kustomization.yaml \
	deploy/components/persistent-state/pvc.yaml \
	deploy/components/persistent-state/state-volume.yaml
# the Decofile CRD against the Go operator's objects and its CEL rules
TESTS += t/integration/crd_decofile.sh
EXTRA_DIST += t/integration/crd_decofile.sh
# deploy/ for real on a node (kubelet + containerd + runc, t/lib/node.sh):
# Available, every container ready, one killed restarts alone
TESTS += t/integration/deploy_node.sh
EXTRA_DIST += t/integration/deploy_node.sh t/lib/node.sh

TESTS += t/integration/check_config.sh
EXTRA_DIST += t/integration/check_config.sh

# the supervisor's state table, without forking anything
check_PROGRAMS += t/unit/decod_fsm_test
t_unit_decod_fsm_test_SOURCES = t/unit/decod_fsm_test.c daemons/decod/decod_fsm.c
t_unit_decod_fsm_test_LDADD = $(TEST_LIBS)
TESTS += t/unit/decod_fsm_test
TESTS += t/integration/reload.sh
EXTRA_DIST += t/integration/reload.sh

# typed payloads: item details and the tree manifest
check_PROGRAMS += t/unit/proto_detail_test t/unit/manifest_test
t_unit_proto_detail_test_LDADD = $(TEST_LIBS)
t_unit_manifest_test_LDADD = $(TEST_LIBS)
TESTS += t/unit/proto_detail_test t/unit/manifest_test
TESTS += t/integration/kube_leader.sh
EXTRA_DIST += t/integration/kube_leader.sh
TESTS += t/integration/kube_scale_smoke.sh
EXTRA_DIST += t/integration/kube_scale_smoke.sh
TESTS += t/integration/kube_e2e.sh
EXTRA_DIST += t/integration/kube_e2e.sh
# a Decofile's hold through kubectl: spec.suspend, deco.sites/rollback-to
TESTS += t/integration/kube_suspend.sh t/integration/kube_template_rollout.sh
EXTRA_DIST += t/integration/kube_suspend.sh t/integration/kube_template_rollout.sh
TESTS += t/integration/kube_faults.sh
EXTRA_DIST += t/integration/kube_faults.sh
# one owner of the CRs' status: one manager, applies counted, hand edits kept, adoption
TESTS += t/integration/kube_status_owner.sh t/integration/kube_events.sh
EXTRA_DIST += t/integration/kube_status_owner.sh t/integration/kube_events.sh
# the template update window's cron expressions
check_PROGRAMS += t/unit/cron_test
t_unit_cron_test_LDADD = $(TEST_LIBS)
TESTS += t/unit/cron_test
TESTS += t/integration/template_policy.sh
EXTRA_DIST += t/integration/template_policy.sh
TESTS += t/integration/template_rollout.sh t/integration/template_fanout.sh \
	t/integration/template_wave_timeout.sh
EXTRA_DIST += t/integration/template_rollout.sh t/integration/template_fanout.sh \
	t/integration/template_wave_timeout.sh t/lib/template.sh
# the preview of a pending template or source change (decoctl diff NAME)
TESTS += t/integration/template_diff.sh
EXTRA_DIST += t/integration/template_diff.sh
# DecofileTemplate generations and what each site used
check_PROGRAMS += t/unit/journal_templates_test
t_unit_journal_templates_test_LDADD = $(TEST_LIBS)
TESTS += t/unit/journal_templates_test

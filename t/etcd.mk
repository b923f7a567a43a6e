# t/etcd.mk: etcd backend tests.  They start real etcd members (Debian's
# etcd-server: /usr/bin/etcd and etcdctl) on free loopback ports; without
# etcd installed the integration scripts skip.
check_PROGRAMS += t/unit/store_etcd_test
t_unit_store_etcd_test_LDADD = $(TEST_LIBS)
TESTS += t/unit/store_etcd_test \
	t/integration/etcd_ops.sh \
	t/integration/etcd_watch_restart.sh \
	t/integration/etcd_cluster.sh \
	t/integration/etcd_lock_kill.sh \
	t/integration/etcd_tls.sh \
	t/integration/store_contract_etcd.sh
EXTRA_DIST += t/lib/etcd.sh \
	t/integration/etcd_ops.sh \
	t/integration/etcd_watch_restart.sh \
	t/integration/etcd_cluster.sh \
	t/integration/etcd_lock_kill.sh \
	t/integration/etcd_tls.sh \
	t/integration/store_contract_etcd.sh
# scale-out
TESTS += t/integration/scaleout_split.sh t/integration/scaleout_takeover.sh \
	t/integration/scaleout_template_pin.sh
EXTRA_DIST += t/integration/scaleout_lib.sh t/integration/scaleout_split.sh \
	t/integration/scaleout_takeover.sh t/integration/scaleout_template_pin.sh

#!/bin/sh
# etcd_ops - every store operation of the etcd backend against a real
# single-member etcd: values, lists over pages, TTLs, watch (with the
# put-to-callback latency), locks.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/etcd.sh"

etcd_start || bail "etcd did not start"
# not exec: the EXIT trap must run to stop etcd (an exec left it running)
DECOD_TEST_ETCD="etcd:$ETCD_URL" DECOD_SESSION_TTL=2s "$top_builddir/t/unit/store_etcd_test"
exit $?

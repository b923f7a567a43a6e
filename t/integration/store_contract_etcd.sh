#!/bin/sh
# store_contract_etcd - the store contract suite (t/unit/store_contract,
# shared with the local backend) against a real single-member etcd.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/etcd.sh"

c="$top_builddir/t/unit/store_contract"
[ -x "$c" ] || skip_all "t/unit/store_contract is not built"
etcd_start || bail "etcd did not start"
# not exec: the EXIT trap must run to stop etcd (an exec left it running)
DECOD_TEST_STORE="etcd:$ETCD_URL" DECOD_SESSION_TTL=2s "$c"
exit $?

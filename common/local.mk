# common/: code two or more programs need, built once into libdecod.a
noinst_LIBRARIES += libdecod.a
libdecod_a_SOURCES = \
	common/log.c common/log.h \
	common/util.c common/util.h \
	common/hash.c common/hash.h \
	common/backoff.c common/backoff.h \
	common/json.c common/json.h \
	common/conf.c common/conf.h common/conf_table.c \
	common/spool.c common/spool.h \
	common/sync_group.c common/sync_group.h \
	common/journal.c common/journal.h common/journal_impl.h common/journal_query.c \
	common/journal_schema.c \
	common/journal_versions.c common/journal_templates.c \
	common/stage.c common/stage.h common/stage_impl.h common/stage_items.c \
	common/stage_health.c common/stage_health.h \
	common/stage_ctl.c common/stage_ctl.h common/stage_metrics.c \
	common/stage_watch.c common/stage_watch.h \
	common/housekeeping.c common/housekeeping.h \
	common/store.c common/store.h common/store_impl.h \
	common/store_local.c common/store_local.h common/store_local_lock.c \
	common/store_local_watch.c \
	common/store_etcd.c common/store_etcd.h common/store_etcd_client.c \
	common/store_etcd_watch.c common/store_etcd_lock.c \
	common/store_keys.c common/store_keys.h \
	common/resource.c common/resource.h common/resource_impl.h common/resource_status.c \
	common/view.c common/view.h \
	common/resource_hold.c common/condition.c common/condition.h \
	common/s3key.c common/s3key.h common/cron.c common/cron.h \
	common/curl_epoll.c common/curl_epoll.h \
	common/kube.c common/kube_client.c common/kube.h common/kube_impl.h common/kube_objects.c \
	common/kube_config.c common/kube_informer.c common/kube_lease.c \
	common/yaml.c common/yaml.h common/yaml_read.c \
	common/metrics.c common/metrics.h common/metrics_series.c common/metrics_series.h \
	common/manifest.c common/manifest.h \
	proto/proto.c proto/proto.h proto/proto_detail.c

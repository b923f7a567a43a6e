# common/base/: the bottom layer: logging, strings, hashing, JSON and YAML,
# settings (conf, conf_table), backoff, cron, metrics, curl's event glue,
# the tree manifest codec.  Includes proto/ and libc only.
noinst_LIBRARIES += libdecod_base.a
libdecod_base_a_SOURCES = \
	common/base/backoff.c \
	common/base/backoff.h \
	common/base/conf.c \
	common/base/conf.h \
	common/base/conf_table.c \
	common/base/cron.c \
	common/base/cron.h \
	common/base/curl_epoll.c \
	common/base/curl_lazy.c \
	common/base/curl_epoll.h \
	common/base/hash.c \
	common/base/hash.h \
	common/base/json.c \
	common/base/json.h \
	common/base/json_scan.h \
	common/base/json_validate.c \
	common/base/lazy_lib.c \
	common/base/lazy_lib.h \
	common/base/log.c \
	common/base/log.h \
	common/base/manifest.c \
	common/base/manifest.h \
	common/base/metrics.c \
	common/base/metrics_http.c \
	common/base/metrics.h \
	common/base/metrics_series.c \
	common/base/metrics_series.h \
	common/base/s3key.c \
	common/base/s3key.h \
	common/base/sync_group.c \
	common/base/sync_group.h \
	common/base/util.c \
	common/base/util.h \
	common/base/yaml.c \
	common/base/yaml.h \
	common/base/yaml_read.c

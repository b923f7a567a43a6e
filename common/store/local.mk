# common/store/: the key-value store behind one interface (store.h,
# store_impl.h; local and etcd back ends), its key names, and the content
# spool.  Includes base.
noinst_LIBRARIES += libdecod_store.a
libdecod_store_a_SOURCES = \
	common/store/spool.c \
	common/store/spool.h \
	common/store/store.c \
	common/store/store.h \
	common/store/store_etcd.c \
	common/store/store_etcd.h \
	common/store/store_etcd_client.c \
	common/store/store_etcd_lock.c \
	common/store/store_etcd_watch.c \
	common/store/store_impl.h \
	common/store/store_keys.c \
	common/store/store_keys.h \
	common/store/store_local.c \
	common/store/store_local.h \
	common/store/store_local_lock.c \
	common/store/store_local_watch.c

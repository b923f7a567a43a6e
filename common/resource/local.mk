# common/resource/: Decofile resources in the store: reading, holds,
# status and conditions, the view decoctl and web share.  Includes journal,
# store, base.
noinst_LIBRARIES += libdecod_resource.a
libdecod_resource_a_SOURCES = \
	common/resource/condition.c \
	common/resource/condition.h \
	common/resource/resource.c \
	common/resource/resource.h \
	common/resource/resource_hold.c \
	common/resource/resource_impl.h \
	common/resource/resource_status.c \
	common/resource/view.c \
	common/resource/view.h

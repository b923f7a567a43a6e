# common/stage/: the skeleton every stage runs on: loop, items, control
# socket, health, metrics, store watches, housekeeping.  Includes journal,
# store, base, proto.
noinst_LIBRARIES += libdecod_stage.a
libdecod_stage_a_SOURCES = \
	common/stage/housekeeping.c \
	common/stage/housekeeping.h \
	common/stage/stage.c \
	common/stage/stage.h \
	common/stage/stage_ctl.c \
	common/stage/stage_ctl.h \
	common/stage/stage_health.c \
	common/stage/stage_health.h \
	common/stage/stage_impl.h \
	common/stage/stage_items.c \
	common/stage/stage_metrics.c \
	common/stage/stage_metrics_http.c \
	common/stage/stage_timer.c \
	common/stage/stage_watch.c \
	common/stage/stage_watch.h

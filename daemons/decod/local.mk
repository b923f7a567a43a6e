# daemons/decod: the supervisor
sbin_PROGRAMS += decod
decod_SOURCES = daemons/decod/decod.c daemons/decod/decod.h \
	daemons/decod/decod_child.c daemons/decod/decod_ctl.c \
	daemons/decod/decod_fsm.c daemons/decod/decod_check.c \
	daemons/decod/decod_notify.c daemons/decod/decod_metrics.c \
	daemons/decod/decod_lease.c daemons/decod/decod_lease.h
decod_LDADD = $(DECOD_LIBS)

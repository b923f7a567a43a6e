# daemons/kube: build fragment (included by the top Makefile.am)
# libkubefront.a is the Kubernetes front door, one component with one name:
# it alone reads the Decofile and DecofileTemplate CRs into the store and
# writes their status back (one apply per CR per change, field manager
# decod), and holds the Lease when no supervisor does.  The fetcher runs it
# on its loop (doc/design.md, "Status", says why it is not a stage yet).
noinst_LIBRARIES += daemons/kube/libkubefront.a
daemons_kube_libkubefront_a_SOURCES = \
	daemons/kube/kube_front.c daemons/kube/kube_front.h \
	daemons/kube/kube_front_status.c daemons/kube/kube_front_int.h \
	daemons/kube/kube_front_hold.c \
	daemons/kube/kube_front_events.c daemons/kube/kube_events_cache.c \
	daemons/kube/kube_events_cache.h
KUBE_FRONT_LIBS = daemons/kube/libkubefront.a

# Decofile CRs as a front door, against a real API server (t/lib/kube.sh)
check_PROGRAMS += t/unit/fetch_kube_test
t_unit_fetch_kube_test_LDADD = $(KUBE_FRONT_LIBS) $(DECOD_LIBS)
TESTS += t/unit/fetch_kube_test t/integration/fetch_kube.sh
EXTRA_DIST += t/integration/fetch_kube.sh

# the Events' pure parts: the LRU of what was emitted, condition -> Event, the body
check_PROGRAMS += t/unit/kube_events_test
t_unit_kube_events_test_LDADD = $(KUBE_FRONT_LIBS) $(DECOD_LIBS)
TESTS += t/unit/kube_events_test

# examples/site: build fragment (included by the top Makefile.am)
# decod-site, the reference replica (both reload styles), used by the demo
# and the tests.
noinst_PROGRAMS += examples/site/decod-site
examples_site_decod_site_SOURCES = examples/site/site.c examples/site/site_doc.c \
    examples/site/site_doc.h
examples_site_decod_site_LDADD = $(DECOD_LIBS) $(MHD_LIBS)

TESTS += t/integration/replica_site.sh t/integration/replica_register.sh
EXTRA_DIST += t/integration/replica_site.sh t/integration/replica_register.sh

# daemons/web: build fragment (included by the top Makefile.am)
# The web stage: web.c (the server driven from the stage loop, routing,
# life), web_push (the git push receivers), web_api (/api/v1), web_rows
# (every status row in memory, kept by store watches), web_events
# (Server-Sent Events of web_rows' changes) and web_page (the page's
# files, installed in $(pkgdatadir)/web).  web_hook (signatures, clone
# URLs, the push's JSON, the delivery ring; no I/O) is in libweb.a for the
# unit test.
noinst_LIBRARIES += daemons/web/libweb.a
daemons_web_libweb_a_SOURCES = daemons/web/web_hook.c daemons/web/web_hook.h
WEB_LIBS = daemons/web/libweb.a

decodlibexec_PROGRAMS += daemons/web/web
daemons_web_web_SOURCES = daemons/web/web.c daemons/web/web.h \
	daemons/web/web_push.c daemons/web/web_api.c daemons/web/web_events.c \
	daemons/web/web_rows.c daemons/web/web_page.c
daemons_web_web_LDADD = $(WEB_LIBS) $(RENDER_LIBS) $(DECOD_LIBS) $(MHD_LIBS) $(GNUTLS_LIBS)

webdir = $(pkgdatadir)/web
dist_web_DATA = daemons/web/static/index.html daemons/web/static/detail.html \
	daemons/web/static/style.css daemons/web/static/app.js \
	daemons/web/static/detail.js

check_PROGRAMS += t/unit/web_hook_test
t_unit_web_hook_test_LDADD = $(WEB_LIBS) $(DECOD_LIBS)
TESTS += t/unit/web_hook_test

TESTS += t/integration/web_hooks.sh t/integration/web_page.sh t/integration/web_template.sh \
	t/integration/web_rows.sh
EXTRA_DIST += t/integration/web_hooks.sh t/integration/web_page.sh t/integration/web_template.sh \
	t/integration/web_rows.sh \
	t/browser/package.json t/browser/setup.sh t/browser/page.js t/browser/template.js \
	t/browser/rollout.js t/browser/tap.js t/lib/browser.sh \
	doc/web.md doc/web-status.png doc/web-status-phone.png

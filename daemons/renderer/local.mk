# daemons/renderer: build fragment (included by the top Makefile.am)
# librender.a holds the merge and compression rules and the spool tree
# loader, shared by the stage, decoctl diff, the unit tests and the
# benchmark programs in bench/.
noinst_LIBRARIES += daemons/renderer/librender.a
daemons_renderer_librender_a_SOURCES = \
	daemons/renderer/render_merge.c daemons/renderer/render_merge.h \
	daemons/renderer/render_hash.c daemons/renderer/render_hash.h \
	daemons/renderer/render_brotli.c daemons/renderer/render_brotli.h \
	daemons/renderer/render_tree.c daemons/renderer/render_tree.h \
	daemons/renderer/render_policy.c daemons/renderer/render_policy.h \
	daemons/renderer/render_rollout_spec.c \
	daemons/renderer/render_diff.c daemons/renderer/render_diff.h \
	daemons/renderer/render_preview.c daemons/renderer/render_preview.h
RENDER_LIBS = daemons/renderer/librender.a

check_PROGRAMS += t/unit/render_merge_test
t_unit_render_merge_test_LDADD = $(RENDER_LIBS) $(DECOD_LIBS)
TESTS += t/unit/render_merge_test
# the hash of a document behind its writer, on a second thread
check_PROGRAMS += t/unit/render_hash_test
t_unit_render_hash_test_LDADD = $(RENDER_LIBS) $(DECOD_LIBS)
TESTS += t/unit/render_hash_test

decodlibexec_PROGRAMS += daemons/renderer/renderer
daemons_renderer_renderer_SOURCES = daemons/renderer/renderer.c \
	daemons/renderer/render_rollout.c daemons/renderer/render_rollout.h \
	daemons/renderer/render_pin.c daemons/renderer/render_pin.h \
	daemons/renderer/render_rearm.c daemons/renderer/render_rearm.h \
	daemons/renderer/render_recompress.c daemons/renderer/render_recompress.h
daemons_renderer_renderer_LDADD = $(RENDER_LIBS) $(DECOD_LIBS)

TESTS += t/integration/render_stage.sh
EXTRA_DIST += t/integration/render_stage.sh

check_PROGRAMS += t/unit/render_policy_test
t_unit_render_policy_test_LDADD = $(RENDER_LIBS) $(DECOD_LIBS)
TESTS += t/unit/render_policy_test

check_PROGRAMS += t/unit/render_rollout_test
t_unit_render_rollout_test_LDADD = $(RENDER_LIBS) $(DECOD_LIBS)
TESTS += t/unit/render_rollout_test

# a site's template row (decoctl template status, the web's .../templates)
check_PROGRAMS += t/unit/render_preview_test
t_unit_render_preview_test_LDADD = $(RENDER_LIBS) $(DECOD_LIBS)
TESTS += t/unit/render_preview_test

# the preview of a pending change: block and key diff of two documents
check_PROGRAMS += t/unit/render_diff_test
t_unit_render_diff_test_LDADD = $(RENDER_LIBS) $(DECOD_LIBS)
TESTS += t/unit/render_diff_test

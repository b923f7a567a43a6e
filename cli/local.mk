# cli/: decoctl, the command line (SPEC §7).  One file per group of
# commands; cli/cli_print.c (YAML and JSON out) is also linked into the unit
# test of YAML in and out (reading YAML is common/base/yaml.c).
bin_PROGRAMS += decoctl
decoctl_SOURCES = \
	cli/decoctl.c cli/cli.h cli/cli_util.c \
	cli/cli_apply.c cli/cli_get.c cli/cli_wait.c cli/cli_journal.c cli/cli_ctl.c \
	cli/cli_yaml.h cli/cli_print.c cli/cli_diff.c cli/cli_hold.c \
	cli/cli_age.c cli/cli_habits.c cli/cli_watch.c cli/cli_completion.c \
	cli/cli_jsonpath.c cli/cli_jsonpath.h cli/cli_template.c cli/cli_diff_name.c
nodist_decoctl_SOURCES = cli/decoctl_version.h
# diff reads inline and dir sources and merges them with the stages' own code
decoctl_LDADD = $(RENDER_LIBS) $(FETCH_LIBS) $(DECOD_LIBS) $(YAML_LIBS)
dist_man_MANS += cli/decoctl.1
EXTRA_DIST += doc/decoctl.md cli/gen-version.sh

# decoctl version: the git commit of the tree it is built from, looked up
# on every make (the header changes only when the commit does); a tarball
# carries the commit in .tarball-commit, written by make dist.
BUILT_SOURCES = cli/decoctl_version.h
CLEANFILES += cli/decoctl_version.h
cli/decoctl_version.h: cli-version-force
	@$(MKDIR_P) cli
	@$(SHELL) $(top_srcdir)/cli/gen-version.sh $(top_srcdir) $(PACKAGE_VERSION) $@
cli-version-force:
.PHONY: cli-version-force
cli/cli_habits.$(OBJEXT): cli/decoctl_version.h
dist-hook:
	@sed -n 's/.*GIT_COMMIT "\([0-9a-f]*\)"/\1/p' cli/decoctl_version.h \
	    >$(distdir)/.tarball-commit

# decoctl's integration tests write status fragments and journal rows with
# the shared driver t/stage/testtool, the way the stages do.

check_PROGRAMS += t/unit/cli_yaml_test t/unit/cli_jsonpath_test
t_unit_cli_jsonpath_test_SOURCES = t/unit/cli_jsonpath_test.c cli/cli_jsonpath.c \
	cli/cli_jsonpath.h cli/cli_age.c
t_unit_cli_jsonpath_test_LDADD = $(DECOD_LIBS)
t_unit_cli_yaml_test_SOURCES = t/unit/cli_yaml_test.c cli/cli_yaml.h cli/cli_print.c
t_unit_cli_yaml_test_LDADD = $(DECOD_LIBS) $(YAML_LIBS)
TESTS += t/unit/cli_yaml_test t/integration/cli_basic.sh t/integration/cli_ctl.sh t/integration/cli_units.sh \
	t/integration/cli_status.sh t/integration/cli_rollback.sh
EXTRA_DIST += t/integration/cli_basic.sh t/integration/cli_ctl.sh t/integration/cli_units.sh \
	t/integration/cli_status.sh t/integration/cli_rollback.sh
TESTS += t/integration/cli_diff.sh
EXTRA_DIST += t/integration/cli_diff.sh
TESTS += t/unit/cli_jsonpath_test t/integration/cli_habits.sh
EXTRA_DIST += t/integration/cli_habits.sh

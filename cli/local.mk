# cli/: decoctl, the command line (SPEC §7).  One file per group of
# commands; cli/cli_yaml.c (YAML and JSON in) and cli/cli_print.c (out) are
# also linked into their unit test.
bin_PROGRAMS += decoctl
decoctl_SOURCES = \
	cli/decoctl.c cli/cli.h \
	cli/cli_apply.c cli/cli_get.c cli/cli_wait.c cli/cli_journal.c cli/cli_ctl.c \
	cli/cli_yaml.c cli/cli_yaml.h cli/cli_print.c cli/cli_hold.c
decoctl_LDADD = $(DECOD_LIBS) $(YAML_LIBS)
dist_man_MANS += cli/decoctl.1
EXTRA_DIST += doc/decoctl.md

# decoctl's integration tests write status fragments and journal rows with
# the shared driver t/stage/testtool, the way the stages do.

check_PROGRAMS += t/unit/cli_yaml_test
t_unit_cli_yaml_test_SOURCES = t/unit/cli_yaml_test.c cli/cli_yaml.c cli/cli_yaml.h \
	cli/cli_print.c
t_unit_cli_yaml_test_LDADD = $(DECOD_LIBS) $(YAML_LIBS)
TESTS += t/unit/cli_yaml_test t/integration/cli_basic.sh t/integration/cli_ctl.sh \
	t/integration/cli_status.sh t/integration/cli_rollback.sh
EXTRA_DIST += t/integration/cli_basic.sh t/integration/cli_ctl.sh \
	t/integration/cli_status.sh t/integration/cli_rollback.sh

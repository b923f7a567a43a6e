# common/journal/: the journal (SQLite): the only place with SQL.
# Includes base.
noinst_LIBRARIES += libdecod_journal.a
libdecod_journal_a_SOURCES = \
	common/journal/journal.c \
	common/journal/journal_items.c \
	common/journal/journal.h \
	common/journal/journal_impl.h \
	common/journal/journal_query.c \
	common/journal/journal_schema.c \
	common/journal/journal_templates.c \
	common/journal/journal_rollout.c \
	common/journal/journal_brotli.c \
	common/journal/journal_brotli.h \
	common/journal/journal_versions.c

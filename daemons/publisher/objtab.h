/*
 * objtab - the publisher's table of published objects, indexed by
 * Decofile (namespace, name): every target keeps its per-object records in
 * one (the file, configmap and s3 targets each own one), so finding an
 * object costs one hash probe whatever the number of Decofiles.  Values
 * are the caller's; the table copies the keys.
 */
#ifndef DECOD_OBJTAB_H
#define DECOD_OBJTAB_H

#include <stddef.h>

struct objtab;

/* objtab_new - an empty table; allocation failure aborts */
struct objtab *objtab_new(void);
/* objtab_free - the table and its keys, not the values; NULL is a no-op */
void objtab_free(struct objtab *t);
/* objtab_get - the value of ns/name, or NULL */
void *objtab_get(const struct objtab *t, const char *ns, const char *name);
/* objtab_put - ns/name holds v (not NULL) from now on; a value it held is replaced */
void objtab_put(struct objtab *t, const char *ns, const char *name, void *v);
/* objtab_del - drop ns/name; returns the value it held, or NULL */
void *objtab_del(struct objtab *t, const char *ns, const char *name);
/* objtab_len - how many keys the table holds */
size_t objtab_len(const struct objtab *t);
/*
 * objtab_next - walk the table: *cursor starts at 0; returns the next value,
 * or NULL at the end.  Deleting any key during a walk is fine (each other
 * value is still met once); putting a new key may rehash: walk again.
 */
void *objtab_next(const struct objtab *t, size_t *cursor);

#endif

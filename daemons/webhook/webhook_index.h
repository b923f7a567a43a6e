/*
 * webhook_index - what the webhook answers from, in memory: the store's
 * Decofiles by (namespace, deploymentId), and the Knative Services it
 * injected by (namespace, name) with the Decofile each one uses.  The
 * stage keeps it level with the store (list at start, then watch), so an
 * admission never waits on anything but this table.
 */
#ifndef DECOD_WEBHOOK_INDEX_H
#define DECOD_WEBHOOK_INDEX_H

#include <stddef.h>

#include "common/util.h"
#include "daemons/webhook/webhook_admit.h"

struct wh_index;

/* wh_index_new / wh_index_free - an empty index; free(NULL) is a no-op */
struct wh_index *wh_index_new(void);
void wh_index_free(struct wh_index *ix);

/*
 * wh_index_put_decofile - add or replace Decofile ns/name from its stored
 * JSON (deploymentId and target read from it; def_target when it names
 * none).  A document that does not parse removes the entry.  0 or -1.
 */
int wh_index_put_decofile(struct wh_index *ix, const char *ns, const char *name,
    const char *json, size_t len, const char *def_target);
void wh_index_del_decofile(struct wh_index *ix, const char *ns, const char *name);

/*
 * wh_index_find - the Decofile of ns with deploymentId dep (when several
 * claim it, the one whose name sorts first, as the operator's list order
 * gives); NULL if none.  Valid until the next change of the index.
 */
const struct wh_decofile *wh_index_find(struct wh_index *ix, const char *ns, const char *dep);

/*
 * wh_index_set_service / wh_index_drop_service - remember (forget) that
 * Service ns/svc uses Decofile decofile; 1 when that changed the index.
 */
int wh_index_set_service(struct wh_index *ix, const char *ns, const char *svc,
    const char *decofile);
int wh_index_drop_service(struct wh_index *ix, const char *ns, const char *svc);

/* wh_index_service - the Decofile Service ns/svc uses, or NULL */
const char *wh_index_service(struct wh_index *ix, const char *ns, const char *svc);

/*
 * wh_index_users - names of the Services of ns that use Decofile name,
 * sorted, ", " between, at most max appended to out; returns the count.
 */
size_t wh_index_users(struct wh_index *ix, const char *ns, const char *name,
    struct buf *out, size_t max);

/* wh_index_counts - how many Decofiles and Services it holds */
void wh_index_counts(const struct wh_index *ix, size_t *decofiles, size_t *services);

#endif

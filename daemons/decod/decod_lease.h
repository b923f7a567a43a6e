/*
 * decod_lease - the supervisor's leader election (issue 17): with a
 * cluster and the local store, decod runs its stages only while it holds
 * the Lease, so a second replica (or a second decod started by hand with
 * the same credentials) stands by instead of doubling the work.
 */
#ifndef DECOD_DECOD_LEASE_H
#define DECOD_DECOD_LEASE_H

#include <stdint.h>

struct conf;
struct decod_lease;

/*
 * decod_lease_new - start contending when leader_elect is on, a cluster is
 * configured and the store is local.  NULL with err "" when election is
 * off; NULL with err set when the Kubernetes configuration is broken.
 */
struct decod_lease *decod_lease_new(struct conf *cf, char *err, size_t errlen);
/* decod_lease_free - a leader releases the lease so a standby takes over at once */
void decod_lease_free(struct decod_lease *dl);

/* loop integration: poll decod_lease_fd for POLLIN, wake by decod_lease_timeout ms */
int decod_lease_fd(const struct decod_lease *dl);
int64_t decod_lease_timeout(const struct decod_lease *dl);
void decod_lease_dispatch(struct decod_lease *dl);

int decod_lease_leading(const struct decod_lease *dl);
/* decod_lease_holder - the Lease's holder as last seen ("" unknown) */
const char *decod_lease_holder(const struct decod_lease *dl);
/* decod_lease_lost - it led and lost the lease: stop everything */
int decod_lease_lost(const struct decod_lease *dl);

#endif

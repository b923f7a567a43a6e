/*
 * decod_lease - the supervisor's side of leader election: it owns the
 * Kubernetes client and the kube_lease (common/kube_lease.c) and tells the
 * supervisor's loop whether it leads.  The settings and the identity
 * (POD_NAME, else HOST:PID) are read in one place, kube_lease_from_conf,
 * shared with the front door of a supervisor-less pod (daemons/kube/kube_front.c).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/kube.h"
#include "common/log.h"
#include "common/util.h"
#include "daemons/decod/decod_lease.h"

struct decod_lease {
	struct kube *k;
	struct kube_lease *l;
	int led, lost;
};

static void
on_change(void *arg, int leading)
{
	struct decod_lease *dl = arg;

	if (leading)
		dl->led = 1;
	else if (dl->led)
		dl->lost = 1;
}

struct decod_lease *
decod_lease_new(struct conf *cf, char *err, size_t errlen)
{
	struct kube *k;
	struct decod_lease *dl;

	err[0] = '\0';
	if (!kube_lease_wanted(cf))
		return NULL;
	if ((k = kube_from_conf(cf, err, errlen)) == NULL)
		return NULL;
	dl = xcalloc(1, sizeof(*dl));
	dl->k = k;
	dl->l = kube_lease_from_conf(dl->k, cf, on_change, dl);
	return dl;
}

const char *
decod_lease_holder(const struct decod_lease *dl)
{
	return kube_lease_holder(dl->l);
}

void
decod_lease_free(struct decod_lease *dl)
{
	if (dl == NULL)
		return;
	kube_lease_free(dl->l);
	kube_free(dl->k);
	free(dl);
}

int
decod_lease_fd(const struct decod_lease *dl)
{
	return kube_fd(dl->k);
}

int64_t
decod_lease_timeout(const struct decod_lease *dl)
{
	return kube_timeout(dl->k);
}

void
decod_lease_dispatch(struct decod_lease *dl)
{
	kube_dispatch(dl->k);
}

int
decod_lease_leading(const struct decod_lease *dl)
{
	return kube_lease_leading(dl->l);
}

int
decod_lease_lost(const struct decod_lease *dl)
{
	return dl->lost;
}

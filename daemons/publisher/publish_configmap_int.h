/*
 * publish_configmap_int.h - what the configmap target's two halves share:
 * publish_configmap.c (caches, drift, restore, the stage's calls) and
 * publish_configmap_write.c (a write as a job: strip, apply, record, status).
 * Private to the publisher.
 */
#ifndef DECOD_PUBLISH_CONFIGMAP_INT_H
#define DECOD_PUBLISH_CONFIGMAP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "common/journal.h"
#include "common/stage.h"
#include "proto/proto.h"
#include "daemons/publisher/publish_record.h"

#define STAGE PUBLISH_STAGE
#define TARGET "configmap"

struct stage;
struct kube;
struct kube_informer;
struct objtab;

/* a ConfigMap we published, as we published it */
struct cmobj {
	char ns[254];
	char name[254];
	char hash[65];		/* content hash published */
	char bin[65];		/* spool blob: the base64 text */
	char source[32];
	int64_t ts;
	int detach;
	char owner[64];		/* the Decofile CR's uid (its store mirror says), or "" */
	int newer;		/* detach and owner changed while a write was in flight */
	int busy;		/* a write in flight */
	int again;		/* check again once it lands */
	int64_t timer;
	long repairs;
};

/* the target: one per process (the stage's) */
struct pcm {
	struct stage *st;
	struct kube *k;
	struct kube_informer *cms;	/* ConfigMaps; CR uids come from the store's mirrors */
	struct objtab *objs;		/* struct cmobj by Decofile */
	int restored;		/* objects rebuilt from the journal after sync */
	long repairs;
};

enum job_kind { JOB_PUBLISH, JOB_ADOPT, JOB_REPAIR, JOB_POLICY, JOB_SWAP };

/* one write of a ConfigMap, from its body to its record */
struct job {
	struct pcm *c;
	enum job_kind kind;
	struct journal_item it;	/* JOB_PUBLISH/ADOPT: the item (id 0: none) */
	char ns[254], name[254];
	char hash[65], bin[65], commit[200], source[32];
	int64_t ts;
	int detach;
	char owner[64];		/* the CR uid the ConfigMap points at unless detach */
	char *body;		/* the apply body */
	size_t len;
	char detail[256];	/* drift: what was wrong */
};

/* ---- publish_configmap.c ---- */

/* pcm_obj_find - the object of ns/name, or NULL */
struct cmobj *pcm_obj_find(struct pcm *c, const char *ns, const char *name);
/* pcm_obj_get - the object of ns/name, made (empty) and linked in if new */
struct cmobj *pcm_obj_get(struct pcm *c, const char *ns, const char *name);
/* pcm_location - "configmap/<ns>/decofile-<name>" into out */
void pcm_location(const char *ns, const char *name, char *out, size_t len);
/*
 * pcm_doc_owner - the uid of the Decofile CR doc mirrors (the front door
 * writes it on the store's copy), or "" for a Decofile not from a CR
 */
const char *pcm_doc_owner(yajl_val doc);
/*
 * pcm_check_obj - make the ConfigMap hold what o says was published (c NULL:
 * the process's target); a write in flight defers it to its landing
 */
void pcm_check_obj(struct pcm *c, struct cmobj *o);

/* ---- publish_configmap_write.c ---- */

/*
 * pcm_job_new - a write of kind for ns/name with the bin blob from the
 * spool (its apply body built); NULL with why when the blob is not there.
 * The caller owns it until pcm_job_apply or pcm_job_free.
 */
struct job *pcm_job_new(struct pcm *c, enum job_kind kind, const char *ns,
    const char *name, const char *hash, const char *bin, int64_t ts, int detach,
    const char *owner, char *why, size_t whylen);
/*
 * pcm_job_apply - send j (takes it): keys not ours are stripped first, then
 * the server-side apply; the answer records it and settles its item
 */
void pcm_job_apply(struct job *j);
/* pcm_job_free - j and its body */
void pcm_job_free(struct job *j);
/*
 * pcm_job_recorded - j's write landed (or needs none): journal, status,
 * notifier, the object updated; 0, or -1 when the journal failed (the
 * item is settled for a retry).  j stays the caller's.
 */
int pcm_job_recorded(struct job *j);

/* ---- publish_configmap_swap.c ---- */

/* pcm_swap - the target's swap (publish_target.h): a JOB_SWAP write */
enum stage_result pcm_swap(struct stage *st, void *arg, const struct journal_item *it,
    const struct proto_publish_detail *pd);

#endif

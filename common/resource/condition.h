/*
 * condition - every condition type and reason decod writes into a
 * resource's status, in one table: which stage sets it, the status it goes
 * with, and a one-line meaning.  doc/runbook.md has one entry per row, with
 * this meaning and what to do; t/integration/runbook.sh fails when a reason
 * set anywhere in daemons/ or common/ has no row here or no entry there.
 * A new reason is a new row (and a runbook entry), nothing else.
 */
#ifndef DECOD_CONDITION_H
#define DECOD_CONDITION_H

/* X(type, reason, status, stage, meaning) */
#define DECOD_CONDITIONS(X) \
	X("Syncing", "Fetched", "True", "fetcher", \
	  "The source was fetched and its tree is in the spool") \
	X("Syncing", "FetchError", "False", "fetcher", \
	  "The newest fetch failed; the last good version stays live; retried with back-off") \
	X("Syncing", "TooLarge", "False", "fetcher", \
	  "The source passes max_tree_size or a file passes the one-file limit; not retried until it changes") \
	X("Syncing", "Rendered", "True", "renderer", \
	  "Blocks and templates merged into a valid decofile") \
	X("Syncing", "ValidationError", "False", "renderer", \
	  "A block is not valid JSON or holds a duplicate key; the message names the file and line") \
	X("Syncing", "TemplateNotReady", "False", "renderer", \
	  "A DecofileTemplate it uses has not been fetched yet; retried") \
	X("Syncing", "PinnedTreeMissing", "False", "renderer", \
	  "A template generation its policy pins is not in this instance's spool; nothing rendered, the published version stays live") \
	X("TemplateUpdateAvailable", "UpToDate", "False", "renderer", \
	  "Every DecofileTemplate the decofile lists is rendered at its newest generation") \
	X("TemplateUpdateAvailable", "PendingChanges", "True", "renderer", \
	  "Manual policy: newer template generations wait for decoctl template apply or the apply annotation") \
	X("TemplateUpdateAvailable", "WaitingForWindow", "True", "renderer", \
	  "Window policy: newer template generations wait for the update window; the message says when it opens") \
	X("TemplateUpdateAvailable", "WaitingForRollout", "True", "renderer", \
	  "Auto policy: the newer template generation reaches this site with a later wave of its rollout") \
	X("TemplateUpdateAvailable", "RolloutHalted", "True", "renderer", \
	  "The template's rollout halted: this site keeps the generation it has") \
	X("TemplateUpdateAvailable", "PinnedTreeMissing", "True", "renderer", \
	  "Manual or Window policy: the pinned generation is not in this instance's spool; an apply takes the newest") \
	X("RolloutHalted", "Progressing", "False", "renderer", \
	  "A DecofileTemplate generation is rolling out; the message says which wave") \
	X("RolloutHalted", "RolloutComplete", "False", "renderer", \
	  "The DecofileTemplate generation reached every site") \
	X("RolloutHalted", "RolledBack", "False", "renderer", \
	  "decoctl template rollback sent every site back to the previous generation") \
	X("RolloutHalted", "WaveFailed", "True", "renderer", \
	  "Sites of a wave failed (render error, replicas refusing the reload, no notifier verdict within waveTimeout) past maxFailed; later waves keep the old generation") \
	X("Syncing", "Suspended", "False", "fetcher", \
	  "Held by decoctl suspend, spec.suspend or a rollback: no fetch and no publish until resumed") \
	X("Syncing", "RollbackFailed", "False", "fetcher", \
	  "The version a rollback asked for is not among the kept versions or its blob is gone") \
	X("Ready", "Published", "True", "publisher", \
	  "The rendered decofile was written to its file target") \
	X("Ready", "ConfigMapCreated", "True", "publisher", \
	  "The rendered decofile is in its ConfigMap") \
	X("Ready", "S3Uploaded", "True", "publisher", \
	  "The rendered decofile was uploaded to S3") \
	X("Ready", "UnsupportedTarget", "False", "publisher", \
	  "spec.target names a target this instance cannot publish to") \
	X("Ready", "ConfigMapFailed", "False", "publisher", \
	  "The API server refused or did not answer the ConfigMap write; retried") \
	X("Ready", "TooLarge", "False", "publisher", \
	  "The rendered decofile does not fit in a ConfigMap") \
	X("Ready", "S3UploadFailed", "False", "publisher", \
	  "The S3 upload failed; retried") \
	X("Ready", "S3NotConfigured", "False", "publisher", \
	  "The target is S3 but no bucket, region or credentials are set") \
	X("Drifted", "InSync", "False", "publisher", \
	  "The target holds the published version") \
	X("Drifted", "Repaired", "True", "publisher", \
	  "The target had been changed by hand and was rewritten with the published version") \
	X("Drifted", "RepairFailed", "True", "publisher", \
	  "The target was changed by hand and rewriting it failed; retried") \
	X("PodsNotified", "NotificationInProgress", "Unknown", "notifier", \
	  "Replicas are being asked to reload the new version") \
	X("PodsNotified", "NotificationSucceeded", "True", "notifier", \
	  "Every replica confirmed the reload") \
	X("PodsNotified", "NotificationFailed", "False", "notifier", \
	  "Some replicas did not confirm the reload; the message names them") \
	X("PodsNotified", "MissingReloadToken", "False", "notifier", \
	  "Some replicas have no reload token, so they cannot be asked") \
	X("Provisioned", "Provisioned", "True", "acl", \
	  "The tenant's Valkey ACL user is on every node") \
	X("Provisioned", "ProvisionFailed", "False", "acl", \
	  "Some Valkey nodes did not take the ACL user; retried") \
	X("Provisioned", "SentinelUnreachable", "False", "acl", \
	  "No Sentinel answered, so the Valkey nodes are unknown; retried") \
	X("Provisioned", "CredentialsError", "False", "acl", \
	  "The tenant's password cannot be kept: its credentials cannot be read or written") \
	X("Provisioned", "Conflict", "False", "acl", \
	  "Another tenant in the namespace already holds the ACL user") \
	X("Provisioned", "Disabled", "False", "acl", \
	  "spec.valkeyAcl is false: no ACL user, it is deleted on every node") \
	X("Provisioned", "InvalidName", "False", "acl", \
	  "The tenant's user name is empty, too long or has characters a Valkey user cannot have") \
	X("Provisioned", "ReservedName", "False", "acl", \
	  "The tenant's user name is reserved for Valkey's administrators")

/* one row of the table */
struct condition_row {
	const char *type, *reason, *status, *stage, *meaning;
};

/* condition_rows - the table, ended by a row with type NULL */
const struct condition_row *condition_rows(void);

/*
 * condition_known - whether (type, reason) is a row of the table; status
 * writers log an error for one that is not (a reason the runbook lacks)
 */
int condition_known(const char *type, const char *reason);

#endif

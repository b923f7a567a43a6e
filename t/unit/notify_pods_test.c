/*
 * notify_pods_test - what a pod object gives the notifier (table): Running
 * with an IP or not, being deleted, the first container's first port or
 * 8000, the literal token of the container named app (not valueFrom, not
 * another container's), IPv6, and the poll tsFile where the decofile is
 * mounted (the webhook's volume, DECO_RELEASE, else /app/decofile).
 * SPEC §4.4's mount dir from the Service annotation
 * deco.sites/decofile-mount-path reaches the notifier this way: the webhook
 * mounts volume decofile-config at that path in the Service's pods (with or
 * without a trailing slash), so the pod itself says where the file is and
 * the notifier needs no read access to Knative Services.
 */
#include "config.h"

#include <string.h>

#include "common/json.h"
#include "daemons/notifier/notify_pods.h"
#include "t/tap.h"

int
main(void)
{
	static const struct {
		const char *label, *pod;
		int replica;
		const char *url, *token, *ts;
	} rows[] = {
		{ "Running with an IP, port and token",
		  "{\"spec\":{\"containers\":[{\"name\":\"app\",\"ports\":[{\"containerPort\":3000}],"
		  "\"env\":[{\"name\":\"X\",\"value\":\"1\"},{\"name\":\"DECO_RELEASE_RELOAD_TOKEN\","
		  "\"value\":\"t1\"}]}]},\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.7\"}}",
		  1, "http://10.0.0.7:3000", "t1", NOTIFY_PODS_TS_FILE },
		{ "no port: 8000",
		  "{\"spec\":{\"containers\":[{\"name\":\"app\"}]},\"status\":{\"phase\":\"Running\","
		  "\"podIP\":\"10.0.0.8\"}}", 1, "http://10.0.0.8:8000", NULL, NOTIFY_PODS_TS_FILE },
		{ "port of the first container, token of the one named app",
		  "{\"spec\":{\"containers\":[{\"name\":\"proxy\",\"ports\":[{\"containerPort\":9000}],"
		  "\"env\":[{\"name\":\"DECO_RELEASE_RELOAD_TOKEN\",\"value\":\"wrong\"}]},"
		  "{\"name\":\"app\",\"ports\":[{\"containerPort\":3000}],\"env\":[{\"name\":"
		  "\"DECO_RELEASE_RELOAD_TOKEN\",\"value\":\"right\"}]}]},\"status\":{\"phase\":"
		  "\"Running\",\"podIP\":\"10.0.0.9\"}}", 1, "http://10.0.0.9:9000", "right",
		  NOTIFY_PODS_TS_FILE },
		{ "valueFrom is not a literal token",
		  "{\"spec\":{\"containers\":[{\"name\":\"app\",\"env\":[{\"name\":"
		  "\"DECO_RELEASE_RELOAD_TOKEN\",\"valueFrom\":{\"secretKeyRef\":{}}}]}]},"
		  "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.1\"}}", 1, "http://10.0.0.1:8000", NULL,
		  NOTIFY_PODS_TS_FILE },
		{ "Pending", "{\"status\":{\"phase\":\"Pending\",\"podIP\":\"10.0.0.2\"}}", 0, NULL, NULL, NULL },
		{ "Running without an IP", "{\"status\":{\"phase\":\"Running\"}}", 0, NULL, NULL, NULL },
		{ "being deleted", "{\"metadata\":{\"deletionTimestamp\":\"2026-12-04T10:00:00Z\"},"
		  "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.3\"}}", 0, NULL, NULL, NULL },
		{ "IPv6", "{\"status\":{\"phase\":\"Running\",\"podIP\":\"fd00::5\"}}", 1,
		  "http://[fd00::5]:8000", NULL, NOTIFY_PODS_TS_FILE },
		{ "poll tsFile where the webhook mounted the decofile",
		  "{\"spec\":{\"containers\":[{\"name\":\"app\",\"volumeMounts\":[{\"name\":\"x\","
		  "\"mountPath\":\"/x\"},{\"name\":\"decofile-config\",\"mountPath\":\"/srv/deco\"}]}]},"
		  "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.4\"}}", 1, "http://10.0.0.4:8000",
		  NULL, "/srv/deco/timestamp.txt" },
		{ "poll tsFile: annotation deco.sites/decofile-mount-path=/data/cfg/ as mounted",
		  "{\"metadata\":{\"annotations\":{\"deco.sites/decofile-mount-path\":\"/data/cfg/\"}},"
		  "\"spec\":{\"containers\":[{\"name\":\"app\",\"volumeMounts\":[{\"name\":"
		  "\"decofile-config\",\"mountPath\":\"/data/cfg/\",\"readOnly\":true}],\"env\":[{"
		  "\"name\":\"DECO_RELEASE\",\"value\":\"file:///data/cfg/decofile.bin\"}]}]},"
		  "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.6\"}}", 1,
		  "http://10.0.0.6:8000", NULL, "/data/cfg/timestamp.txt" },
		{ "poll tsFile from DECO_RELEASE=file://",
		  "{\"spec\":{\"containers\":[{\"name\":\"app\",\"env\":[{\"name\":\"DECO_RELEASE\","
		  "\"value\":\"file:///mnt/d/decofile.bin\"}]}]},\"status\":{\"phase\":\"Running\","
		  "\"podIP\":\"10.0.0.5\"}}", 1, "http://10.0.0.5:8000", NULL, "/mnt/d/timestamp.txt" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		yajl_val pod = json_parse(rows[i].pod, strlen(rows[i].pod), NULL);
		const char *token = NULL;
		char url[128] = "", ts[1024] = "";
		int r;

		if (!ok(pod != NULL, "%s: JSON", rows[i].label))
			continue;
		r = notify_pods_replica(pod, url, sizeof(url), &token, ts, sizeof(ts));
		is_int(r, rows[i].replica, "%s: replica or not", rows[i].label);
		if (r) {
			is_str(url, rows[i].url, "%s: url", rows[i].label);
			is_str(token, rows[i].token, "%s: token", rows[i].label);
			is_str(ts, rows[i].ts, "%s: poll tsFile", rows[i].label);
		}
		yajl_tree_free(pod);
	}
	return done_testing();
}

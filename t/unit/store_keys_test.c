/*
 * store_keys_test - the key layout: every builder with the default and a
 * custom prefix, parsing resource keys back, and name validation.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/store_keys.h"
#include "t/tap.h"

/* build - one row per builder, so the whole layout is visible here */
static char *
build(int which)
{
	switch (which) {
	case 0: return key_resource("decofiles", "sites-loja", "loja");
	case 1: return key_resource_prefix("decofiles", NULL);
	case 2: return key_resource_prefix("templates", "ns1");
	case 3: return key_status("decofiles", "ns1", "loja", "publisher");
	case 4: return key_status_prefix("decofiles", "ns1", "loja");
	case 5: return key_endpoint("ns1", "loja", "pod-1");
	case 6: return key_endpoint_prefix("ns1", "loja");
	case 7: return key_sync("ns1", "loja");
	case 8: return key_lock("ns1", "loja");
	case 9: return key_instance("host-a:42");
	case 10: return key_resource("tenants", "ns1", "t1");
	}
	return NULL;
}

static const char *const want_default[] = {
	"/decod/decofiles/sites-loja/loja",
	"/decod/decofiles/",
	"/decod/templates/ns1/",
	"/decod/status/decofiles/ns1/loja/publisher",
	"/decod/status/decofiles/ns1/loja/",
	"/decod/endpoints/ns1/loja/pod-1",
	"/decod/endpoints/ns1/loja/",
	"/decod/sync/ns1/loja",
	"/decod/locks/ns1/loja",
	"/decod/instances/host-a:42",
	"/decod/tenants/ns1/t1",
};

static void
check_builders(const char *label, const char *pfx)
{
	for (int i = 0; i < (int)(sizeof(want_default) / sizeof(want_default[0])); i++) {
		char *got = build(i), *want;

		want = malloc(strlen(pfx) + strlen(want_default[i]));
		strcpy(want, pfx);
		strcat(want, want_default[i] + strlen("/decod"));
		is_str(got, want, "%s: builder %d", label, i);
		free(got);
		free(want);
	}
}

static const struct {
	const char *set;	/* NULL: default */
	const char *want;
} prefixes[] = {
	{ NULL, "/decod" },
	{ "/x", "/x" },
	{ "x/", "/x" },
	{ "//a/b//", "/a/b" },
	{ "/", "" },
	{ "", "" },
};

static const struct {
	const char *label, *key;
	int rv;
	const char *kind, *ns, *name;
} parses[] = {
	{ "decofile", "/decod/decofiles/ns/loja", 0, "decofiles", "ns", "loja" },
	{ "template", "/decod/templates/a/b", 0, "templates", "a", "b" },
	{ "tenant", "/decod/tenants/a/b", 0, "tenants", "a", "b" },
	{ "status is not a resource", "/decod/status/decofiles/ns/n/s", -1, 0, 0, 0 },
	{ "sync is not a resource", "/decod/sync/ns/name", -1, 0, 0, 0 },
	{ "endpoint", "/decod/endpoints/ns/dep/id", -1, 0, 0, 0 },
	{ "other prefix", "/other/decofiles/ns/n", -1, 0, 0, 0 },
	{ "prefix lookalike", "/decodx/decofiles/ns/n", -1, 0, 0, 0 },
	{ "too few parts", "/decod/decofiles/ns", -1, 0, 0, 0 },
	{ "too many parts", "/decod/decofiles/ns/n/x", -1, 0, 0, 0 },
	{ "empty ns", "/decod/decofiles//n", -1, 0, 0, 0 },
	{ "empty name", "/decod/decofiles/ns/", -1, 0, 0, 0 },
	{ "no leading slash", "decod/decofiles/ns/n", -1, 0, 0, 0 },
	{ "empty", "", -1, 0, 0, 0 },
};

static const struct {
	const char *s;
	int valid;
} names[] = {
	{ "loja", 1 }, { "a", 1 }, { "0", 1 }, { "sites-loja", 1 }, { "a.b-c9", 1 },
	{ "", 0 }, { "-a", 0 }, { "a-", 0 }, { ".a", 0 }, { "a.", 0 }, { "A", 0 },
	{ "a_b", 0 }, { "a/b", 0 }, { "a b", 0 }, { "..", 0 }, { "é", 0 },
	/* DNS-1123 subdomain: labels start and end alphanumeric (issue 13) */
	{ "a..b", 0 }, { "a.-b", 0 }, { "a-.b", 0 }, { "a.b.c", 1 }, { "my-app.v2", 1 },
	{ "a--b", 1 },
};
static const struct { const char *s; int ns, label; } labels[] = {
	{ "sites-loja", 1, 1 }, { "a.b", 0, 1 }, { "Loja_1", 0, 1 }, { "-a", 0, 0 },
	{ "a_", 0, 0 }, { "", 0, 0 }, { "a..b", 0, 1 },
};

int
main(void)
{
	char kind[254], ns[254], name[254], big[400], longname[300];

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		keys_set_prefix(prefixes[i].set);
		is_str(keys_prefix(), prefixes[i].want, "prefix set to %s",
		    prefixes[i].set ? prefixes[i].set : "(default)");
	}
	keys_set_prefix(NULL);
	check_builders("default prefix", "/decod");
	keys_set_prefix("/tenant-a/decod/");
	check_builders("custom prefix", "/tenant-a/decod");
	keys_set_prefix("");
	check_builders("no prefix", "");
	keys_set_prefix(NULL);

	for (size_t i = 0; i < sizeof(parses) / sizeof(parses[0]); i++) {
		strcpy(kind, "-");
		strcpy(ns, "-");
		strcpy(name, "-");
		is_int(key_parse_resource(parses[i].key, kind, ns, name), parses[i].rv,
		    "parse: %s", parses[i].label);
		if (parses[i].rv == 0) {
			is_str(kind, parses[i].kind, "parse: %s: kind", parses[i].label);
			is_str(ns, parses[i].ns, "parse: %s: ns", parses[i].label);
			is_str(name, parses[i].name, "parse: %s: name", parses[i].label);
		} else
			ok(strcmp(kind, "-") == 0 && strcmp(ns, "-") == 0 &&
			    strcmp(name, "-") == 0, "parse: %s: outputs untouched",
			    parses[i].label);
	}
	/* a part of 254 bytes does not fit the 254-byte buffers */
	memset(longname, 'a', 254);
	longname[254] = '\0';
	snprintf(big, sizeof(big), "/decod/decofiles/ns/%s", longname);
	is_int(key_parse_resource(big, kind, ns, name), -1, "parse: a 254-byte name is refused");
	big[strlen(big) - 1] = '\0';
	is_int(key_parse_resource(big, kind, ns, name), 0, "parse: a 253-byte name fits");
	is_int(strlen(name), 253, "parse: the 253-byte name is whole");
	keys_set_prefix("/p");
	is_int(key_parse_resource("/p/tenants/a/b", kind, ns, name), 0, "parse with custom prefix");
	is_int(key_parse_resource("/decod/tenants/a/b", kind, ns, name), -1,
	    "parse refuses the default prefix once changed");
	keys_set_prefix(NULL);

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		is_int(name_valid(names[i].s), names[i].valid, "name_valid(\"%s\")", names[i].s);
	memset(big, 'a', 253);
	big[253] = '\0';
	is_int(name_valid(big), 1, "name_valid: 253 bytes");
	big[253] = 'a';
	big[254] = '\0';
	is_int(name_valid(big), 0, "name_valid: 254 bytes");
	is_int(name_valid(NULL), 0, "name_valid(NULL)");
	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
		is_int(ns_valid(labels[i].s), labels[i].ns, "ns_valid(\"%s\")", labels[i].s);
		is_int(label_value_valid(labels[i].s), labels[i].label,
		    "label_value_valid(\"%s\")", labels[i].s);
	}
	memset(big, 'a', 64);
	big[63] = '\0';
	is_int(ns_valid(big), 1, "ns_valid: 63 bytes");
	is_int(label_value_valid(big), 1, "label_value_valid: 63 bytes");
	big[63] = 'a';
	big[64] = '\0';
	is_int(ns_valid(big), 0, "ns_valid: 64 bytes");
	is_int(label_value_valid(big), 0, "label_value_valid: 64 bytes");
	return done_testing();
}

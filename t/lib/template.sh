# t/lib/template.sh - the sites of a DecofileTemplate rollout test and what
# they say, for the tests that drive template base in $NS through decod
# (after t/lib/pipeline.sh; SITES the site names, WEB the web stage's
# /api/v1/decofiles/$NS when the test runs it).
#
#   tpl_yaml LABEL ROLLOUT $T/base.yaml: template base, a block Theme
#                          {label: LABEL}, spec.rollout ROLLOUT (flow YAML)
#   tpl_sites_yaml         $T/sites.yaml: one Auto Decofile per site of
#                          SITES, inline, listing template base
#   tpl_canary             the canary: the site with the lowest
#                          sha256("ns/name") (doc/templates.md)
#   label_is SITE LABEL    SITE's published document has Theme.label LABEL
#   all_label LABEL        every site's has
#   tstatus                decoctl template status base -o json
#   ro_state STATE         the newest rollout is in STATE
#   tcond                  the template's RolloutHalted condition (JSON)
#   agree                  each site's row of template base is the same,
#                          byte for byte, in decoctl template status and the
#                          web's GET .../templates (rows in $T/ctl.rows and
#                          $T/web.rows)
#   web_state SITE         the web's state of SITE for base

tpl_yaml() { # LABEL ROLLOUT: $T/base.yaml, template base (Theme.label LABEL, spec.rollout ROLLOUT)
	cat >"$T/base.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: DecofileTemplate
metadata: {name: base, namespace: $NS}
spec:
  source: inline
  inline:
    value:
      Theme: {"label": "$1"}
  rollout: $2
YAML
}

tpl_sites_yaml() {
	for s in $SITES; do
		cat >>"$T/sites.yaml" <<YAML
---
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata: {name: $s, namespace: $NS}
spec:
  source: inline
  inline: {value: {Page: {"site": "$s"}}}
  templates: [base]
YAML
	done
}

tpl_canary() {
	for s in $SITES; do
		printf '%s %s\n' "$(printf '%s' "$NS/$s" | sha256sum | cut -c1-64)" "$s"
	done | sort | head -1 | cut -d' ' -f2
}

_tpl_doc() {
	loc=$(ctl get decofile "$1" -o json | jq -r '.status.location // ""')
	[ -n "$loc" ] && cat "${loc#file://}"
}
label_is() { [ "$(_tpl_doc "$1" | jq -r .Theme.label 2>/dev/null)" = "$2" ]; }
all_label() { for s in $SITES; do label_is "$s" "$1" || return 1; done; }
tstatus() { ctl template status base -o json; }
ro_state() { [ "$(tstatus | jq -r .rollout.state)" = "$1" ]; }
tcond() { ctl get template base -o json | jq -c '[.status.conditions[]? | select(.type=="RolloutHalted")][0]'; }

# each site's row of template base: decoctl's, and the web's (named by the site)
_tpl_ctl_rows() { tstatus | jq -c '.sites[]' | sort; }
_tpl_web_rows() {
	for s in $SITES; do
		curl -sf "$WEB/$s/templates" | jq -c --arg s "$s" '.[] | select(.name=="base") | .name = $s'
	done | sort
}
agree() { _tpl_ctl_rows >"$T/ctl.rows" && _tpl_web_rows >"$T/web.rows" && [ -s "$T/ctl.rows" ] &&
    cmp -s "$T/ctl.rows" "$T/web.rows"; }
web_state() { curl -sf "$WEB/$1/templates" | jq -r '.[] | select(.name=="base") | .state'; }

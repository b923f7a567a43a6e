// decod's decofile page: /api/v1/decofiles/{ns}/{name} (decoctl describe
// -o json) laid out; every value set as text, never as markup.
"use strict";

const parts = location.pathname.split("/").map(decodeURIComponent);
const ns = parts[2], name = parts[3];
document.getElementById("title").textContent = ns + "/" + name;
document.title = "decod — " + ns + "/" + name;

function rowOf(tbody, values, cls) {
  const tr = document.createElement("tr");
  if (cls) tr.className = cls;
  for (const v of values) {
    const td = document.createElement("td");
    td.textContent = v == null || v === "" ? "-" : String(v);
    tr.appendChild(td);
  }
  tbody.appendChild(tr);
}

function field(dl, label, value) {
  const dt = document.createElement("dt"), dd = document.createElement("dd");
  dt.textContent = label;
  dd.textContent = value == null || value === "" ? "-" : String(value);
  dl.append(dt, dd);
}

fetch("/api/v1/decofiles/" + encodeURIComponent(ns) + "/" + encodeURIComponent(name))
  .then(r => r.ok ? r.json() : r.json().then(j => Promise.reject(j.error)))
  .then(d => {
    const df = d.decofile, st = df.status || {}, spec = df.spec || {};
    const dl = document.getElementById("fields");
    field(dl, "Source", spec.source || "inline");
    field(dl, "Target", spec.target);
    field(dl, "Commit", st.githubCommit);
    field(dl, "Content hash", st.contentHash);
    field(dl, "Location", st.location);
    field(dl, "Generation", (df.metadata || {}).generation);
    field(dl, "Observed generation", st.observedGeneration);
    const cb = document.querySelector("#conditions tbody");
    for (const c of st.conditions || [])
      rowOf(cb, [c.type, c.status, c.reason, c.lastTransitionTime, c.message],
        c.status === "False" ? "failing" : "");
    const rb = document.querySelector("#replicas tbody");
    for (const r of d.replicas || [])
      rowOf(rb, [r.replica, r.contentHash, r.result, r.at], r.current ? "" : "stale");
    const ib = document.querySelector("#inventory tbody");
    for (const i of d.inventory || []) rowOf(ib, [i.target, i.location, i.contentHash, i.updatedAt]);
    const hb = document.querySelector("#history tbody");
    for (const h of (d.events || []).slice().reverse()) rowOf(hb, [h.at, h.event, h.detail]);
  })
  .catch(e => {
    const p = document.getElementById("error");
    p.hidden = false;
    p.textContent = "Cannot read this decofile: " + e;
  });

// the templates' rollout for this site and what taking them would change
// (decoctl template status, decoctl diff NAME -o json)
const base = "/api/v1/decofiles/" + encodeURIComponent(ns) + "/" + encodeURIComponent(name);

// a row's class by its state (the states of decoctl template status):
// stopped by a failure in red, on its way or held in amber, back in grey
const TPL_CLASS = {
  failed: "failing", halted: "failing",
  pending: "pending-tpl", updating: "pending-tpl", waiting: "pending-tpl",
  reverting: "pending-tpl", reverted: "reverted-tpl",
  "not-rendered": "stale", "invalid-policy": "failing",
};

function loadTemplates() {
  return fetch(base + "/templates").then(r => r.ok ? r.json() : []).then(ts => {
    const tb = document.querySelector("#templates tbody");
    tb.textContent = "";
    for (const t of ts) {
      rowOf(tb, [t.name, t.generation, t.fetchedGeneration, t.state, t.policy, t.nextWindow,
        t.wave, t.reason], TPL_CLASS[t.state] || "");
      tb.lastChild.dataset.state = t.state;
    }
  });
}

function loadPending() {
  return fetch(base + "/diff").then(r => r.json().then(j => ({ ok: r.ok, j }))).then(({ ok, j }) => {
    const sum = document.getElementById("pending-summary");
    const tb = document.querySelector("#pending tbody");
    tb.textContent = "";
    if (!ok) { sum.textContent = j.error || "no preview"; return; }
    const pend = (j.templates || []).map(t => "DecofileTemplate '" + t.name + "': generation " +
      (t.from ? t.from.generation + " → " : "") + t.to.generation);
    sum.textContent = (pend.length ? pend.join("; ") + " — " : "") +
      ((j.blocks || []).length ? j.summary : "nothing pending");
    for (const b of j.blocks || []) {
      rowOf(tb, [b.change, b.name, (b.keys || []).map(k =>
        ({ added: "+", removed: "-", changed: "~" }[k.change] || "") + k.path.join(".")).join(" ")]);
      tb.lastChild.firstChild.className = "op-" + b.change;
    }
  });
}

function act(action, label) {
  const out = document.getElementById("action-result");
  out.textContent = label + "…";
  fetch(base + "/" + action, { method: "POST",
    headers: { Authorization: "Bearer " + document.getElementById("token").value } })
    .then(r => r.json().then(j => ({ status: r.status, j })))
    .then(({ status, j }) => {
      out.textContent = status + ": " + (j.result || j.error);
      out.dataset.status = String(status);
    })
    .catch(e => { out.textContent = String(e); out.dataset.status = "error"; });
}

document.getElementById("do-sync").addEventListener("click", () => act("sync", "sync"));
document.getElementById("do-apply").addEventListener("click", () => act("template-apply", "apply"));
loadTemplates();
loadPending();

// decod's status page: one table of every decofile, kept live by the
// Server-Sent Events of /api/v1/events (a "snapshot", then "row" and
// "delete" events); the browser never polls.  Every value is set as
// text (textContent), never as markup: names and messages come from users.
"use strict";

const rows = new Map();		// "ns/name" -> status row (as decoctl status -o json)
const tbody = document.querySelector("#decofiles tbody");
const fNs = document.getElementById("f-ns");
const fState = document.getElementById("f-state");

function keyOf(r) { return r.namespace + "/" + r.name; }

function state(r) {
  if (r.suspended) return "suspended";
  if (r.ready === "False" || r.syncing === "False" || r.podsNotified === "False") return "failing";
  if (r.ready === "True" && r.podsNotified !== "Unknown") return "ready";
  return "progressing";
}

function age(ts) {
  if (!ts) return "-";
  let s = Math.max(0, Math.floor(Date.now() / 1000 - ts));
  if (s < 120) return s + "s";
  if (s < 7200) return Math.floor(s / 60) + "m";
  if (s < 172800) return Math.floor(s / 3600) + "h";
  return Math.floor(s / 86400) + "d";
}

function short(s, n) { return s ? s.slice(0, n) : "-"; }

function cell(tr, label, text, cls) {
  const td = document.createElement("td");
  td.dataset.label = label;
  td.textContent = text == null || text === "" ? "-" : String(text);
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

// pods - "x/y" of replicas confirmed and a bar, where the row says; else the status
function pods(tr, r) {
  const td = cell(tr, "Pods notified", r.podsNotified, "s-" + r.podsNotified);
  if (typeof r.replicasConfirmed === "number" && r.replicasTotal > 0) {
    td.textContent = r.replicasConfirmed + "/" + r.replicasTotal;
    const bar = document.createElement("span");
    bar.className = "bar";
    const fill = document.createElement("span");
    fill.style.width = Math.round(100 * r.replicasConfirmed / r.replicasTotal) + "%";
    bar.appendChild(fill);
    td.appendChild(bar);
  }
}

function render(r) {
  const tr = document.createElement("tr");
  const st = state(r);
  tr.className = st;
  tr.dataset.key = keyOf(r);
  cell(tr, "Namespace", r.namespace);
  const name = cell(tr, "Name", "");
  const a = document.createElement("a");
  a.href = "/decofiles/" + encodeURIComponent(r.namespace) + "/" + encodeURIComponent(r.name);
  a.textContent = r.name;
  name.textContent = "";
  name.appendChild(a);
  if (st === "failing" && r.message) {
    const m = document.createElement("div");
    m.className = "msg";
    m.textContent = r.message;
    name.appendChild(m);
  }
  cell(tr, "Source", r.source);
  cell(tr, "Commit", short(r.commit, 7), "mono");
  cell(tr, "Content hash", short(r.contentHash, 12), "mono");
  cell(tr, "Target", r.target);
  cell(tr, "Ready", r.ready, "s-" + r.ready);
  pods(tr, r);
  cell(tr, "Age", age(r.timestamp));
  cell(tr, "Owner", r.owner);
  return tr;
}

const order = { failing: 0, progressing: 1, suspended: 2, ready: 3 };
const trs = new Map();		// "ns/name" -> its <tr>, when shown
function before(st, key, tr) {	// (st, key) sorts before the row tr
  return (order[st] - order[tr.className]) < 0 ||
    (order[st] === order[tr.className] && key.localeCompare(tr.dataset.key) < 0);
}
function passes(r) {
  return (!fNs.value || r.namespace === fNs.value) && (!fState.value || state(r) === fState.value);
}

function counts() {
  let failing = 0;
  for (const r of rows.values()) if (state(r) === "failing") failing++;
  document.getElementById("empty").hidden = trs.size > 0;
  document.getElementById("counts").textContent =
    trs.size + " shown of " + rows.size + ", " + failing + " failing";
}

function addNamespaces(spaces) {
  const have = new Set(Array.from(fNs.options).map(o => o.value));
  for (const s of Array.from(spaces).sort()) {
    if (have.has(s)) continue;
    const o = document.createElement("option");
    o.value = s;
    o.textContent = s;
    fNs.appendChild(o);
  }
}

function draw() {
  const all = Array.from(rows.values());
  all.sort((a, b) => (order[state(a)] - order[state(b)]) ||
    keyOf(a).localeCompare(keyOf(b)));
  const frag = document.createDocumentFragment();
  trs.clear();
  for (const r of all) {
    if (!passes(r)) continue;
    const tr = render(r);
    trs.set(keyOf(r), tr);
    frag.appendChild(tr);
  }
  tbody.replaceChildren(frag);
  counts();
  addNamespaces(new Set(all.map(r => r.namespace)));
}

// update - one row changed or went: its <tr> replaced in place, or moved
// to where the order puts it (a binary search of the table), not a redraw
function update(key) {
  const r = rows.get(key), old = trs.get(key);
  if (!r || !passes(r)) {
    if (old) { old.remove(); trs.delete(key); }
    return;
  }
  const tr = render(r);
  trs.set(key, tr);
  if (old && old.className === tr.className) { old.replaceWith(tr); return; }
  if (old) old.remove();
  const kids = tbody.children;
  let lo = 0, hi = kids.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (before(tr.className, key, kids[mid])) hi = mid; else lo = mid + 1;
  }
  tbody.insertBefore(tr, lo < kids.length ? kids[lo] : null);
  addNamespaces([r.namespace]);
}

// the changes of one animation frame together: a few rows in place, many
// at once as one redraw
let pending = false;
const changed = new Set();
function schedule(key) {
  changed.add(key);
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => {
    pending = false;
    if (changed.size > 200) draw();
    else { for (const k of changed) update(k); counts(); }
    changed.clear();
  });
}

fNs.addEventListener("change", draw);
fState.addEventListener("change", draw);

const conn = document.getElementById("conn");
const es = new EventSource("/api/v1/events");
es.addEventListener("open", () => { conn.textContent = "live"; conn.className = "conn live"; });
es.addEventListener("error", () => { conn.textContent = "reconnecting…"; conn.className = "conn down"; });
es.addEventListener("snapshot", (e) => {
  rows.clear();
  for (const r of JSON.parse(e.data)) rows.set(keyOf(r), r);
  draw();
});
es.addEventListener("row", (e) => { const r = JSON.parse(e.data); rows.set(keyOf(r), r); schedule(keyOf(r)); });
es.addEventListener("delete", (e) => { const k = keyOf(JSON.parse(e.data)); rows.delete(k); schedule(k); });

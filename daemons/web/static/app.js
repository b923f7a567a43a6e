// decod's status page: one table of every decofile, read from
// /api/v1/status when the Server-Sent Events of /api/v1/events?rows=0 say
// so ("snapshot") and kept live by their "row" and "delete" events; the
// browser never polls.  Rows are built as HTML text in one piece, so
// 10,000 of them draw in a fraction of a second.  Every value goes through
// esc() (or textContent): names and messages come from users.
"use strict";

const rows = new Map();		// "ns/name" -> status row (as decoctl status -o json)
const trs = new Map();		// "ns/name" -> its <tr>, when shown
const tbody = document.querySelector("#decofiles tbody");
const fNs = document.getElementById("f-ns");
const fState = document.getElementById("f-state");
const tmpl = document.createElement("template");

function keyOf(r) { return r.namespace + "/" + r.name; }

function state(r) {
  if (r.suspended) return "suspended";
  if (r.ready === "False" || r.syncing === "False" || r.podsNotified === "False") return "failing";
  if (r.ready === "True" && r.podsNotified !== "Unknown") return "ready";
  return "progressing";
}

const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
function esc(v) { return String(v).replace(/[&<>"']/g, (c) => ESC[c]); }

function age(ts) {
  if (!ts) return "-";
  let s = Math.max(0, Math.floor(Date.now() / 1000 - ts));
  if (s < 120) return s + "s";
  if (s < 7200) return Math.floor(s / 60) + "m";
  if (s < 172800) return Math.floor(s / 3600) + "h";
  return Math.floor(s / 86400) + "d";
}

function short(s, n) { return s ? s.slice(0, n) : "-"; }

function cell(label, text, cls, inner) {
  return '<td data-label="' + label + '"' + (cls ? ' class="' + esc(cls) + '"' : "") + ">" +
    esc(text == null || text === "" ? "-" : text) + (inner || "") + "</td>";
}

// pods - "x/y" of replicas confirmed and a bar, where the row says; else the status
function pods(r) {
  const cls = "s-" + r.podsNotified;
  if (typeof r.replicasConfirmed !== "number" || !(r.replicasTotal > 0))
    return cell("Pods notified", r.podsNotified, cls);
  const pct = Math.round(100 * r.replicasConfirmed / r.replicasTotal);
  return cell("Pods notified", r.replicasConfirmed + "/" + r.replicasTotal, cls,
    '<span class="bar"><span style="width:' + pct + '%"></span></span>');
}

// rowHTML - one <tr> as text, every value escaped
function rowHTML(r) {
  const st = state(r);
  const href = "/decofiles/" + encodeURIComponent(r.namespace) + "/" + encodeURIComponent(r.name);
  const msg = st === "failing" && r.message ? '<div class="msg">' + esc(r.message) + "</div>" : "";
  return '<tr class="' + st + '" data-key="' + esc(keyOf(r)) + '">' +
    cell("Namespace", r.namespace) +
    '<td data-label="Name"><a href="' + esc(href) + '">' + esc(r.name) + "</a>" + msg + "</td>" +
    cell("Source", r.source) +
    cell("Commit", short(r.commit, 7), "mono") +
    cell("Content hash", short(r.contentHash, 12), "mono") +
    cell("Target", r.target) +
    cell("Ready", r.ready, "s-" + r.ready) +
    pods(r) +
    cell("Age", age(r.timestamp)) +
    cell("Owner", r.owner) +
    "</tr>";
}

// the table's order, the server's too (web_rows.c): state, then the key
// by code unit (not the locale's, which the server cannot know)
const order = { failing: 0, progressing: 1, suspended: 2, ready: 3 };
function cmpKey(a, b) { return a < b ? -1 : a > b ? 1 : 0; }
function before(st, key, tr) {	// (st, key) sorts before the row tr
  return (order[st] - order[tr.className]) < 0 ||
    (order[st] === order[tr.className] && cmpKey(key, tr.dataset.key) < 0);
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
    have.add(s);
  }
}

// append - rows (in the table's order) added at the table's end, as one
// piece of HTML; their <tr>s remembered
function append(list) {
  let html = "";
  const shown = [];
  for (const r of list) {
    if (!passes(r)) continue;
    html += rowHTML(r);
    shown.push(keyOf(r));
  }
  const first = tbody.children.length;
  tbody.insertAdjacentHTML("beforeend", html);
  const kids = tbody.children;
  for (let i = 0; i < shown.length; i++) trs.set(shown[i], kids[first + i]);
}

// draw - the whole table again: the first screenful at once, the rest
// in chunks after the browser has painted it, one task each so the page
// stays responsive (row changes wait until the last)
const FIRST = 100, CHUNK = 2000;
let drawing = 0;
function draw() {
  const all = Array.from(rows.values());
  all.sort((a, b) => (order[state(a)] - order[state(b)]) || cmpKey(keyOf(a), keyOf(b)));
  trs.clear();
  tbody.textContent = "";
  append(all.slice(0, FIRST));
  counts();
  addNamespaces(new Set(all.map(r => r.namespace)));
  const d = ++drawing;
  let at = FIRST;
  function rest() {
    if (d !== drawing) return;
    if (at >= all.length) { drawing = 0; counts(); return; }
    append(all.slice(at, at + CHUNK));
    at += CHUNK;
    setTimeout(rest, 0);
  }
  if (all.length <= FIRST) drawing = 0;
  else requestAnimationFrame(() => setTimeout(rest, 0));
}

// update - one row changed or went: its <tr> replaced in place, or moved
// to where the order puts it (a binary search of the table), not a redraw
function update(key) {
  const r = rows.get(key), old = trs.get(key);
  if (!r || !passes(r)) {
    if (old) { old.remove(); trs.delete(key); }
    return;
  }
  tmpl.innerHTML = rowHTML(r);
  const tr = tmpl.content.firstElementChild;
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
  requestAnimationFrame(apply);
}
function apply() {
  if (drawing) { requestAnimationFrame(apply); return; }
  pending = false;
  if (changed.size > 200) draw();
  else { for (const k of changed) update(k); counts(); }
  changed.clear();
}

fNs.addEventListener("change", draw);
fState.addEventListener("change", draw);

// the rows: a "snapshot" event says to read them (from /api/v1/status:
// chromium's EventSource is slow with megabytes, fetch is not); the
// changes that come meanwhile are held and applied after them, in order
// (each is a whole row, so the last one wins)
let gen = 0, held = null;
function change(type, data) {
  if (held) { held.push([type, data]); return; }
  if (type === "row") { const r = JSON.parse(data); rows.set(keyOf(r), r); schedule(keyOf(r)); }
  else { const k = keyOf(JSON.parse(data)); rows.delete(k); schedule(k); }
}
function load() {
  const g = ++gen;
  held = [];
  fetch("/api/v1/status").then((r) => r.ok ? r.json() : Promise.reject(r.status)).then((list) => {
    if (g !== gen) return;
    rows.clear();
    changed.clear();
    for (const r of list) rows.set(keyOf(r), r);
    draw();
    const h = held;
    held = null;
    for (const [type, data] of h) change(type, data);
  }).catch(() => { if (g === gen) setTimeout(load, 2000); });
}

const conn = document.getElementById("conn");
const es = new EventSource("/api/v1/events?rows=0");
es.addEventListener("open", () => { conn.textContent = "live"; conn.className = "conn live"; });
es.addEventListener("error", () => { conn.textContent = "reconnecting…"; conn.className = "conn down"; });
es.addEventListener("snapshot", load);
es.addEventListener("row", (e) => change("row", e.data));
es.addEventListener("delete", (e) => change("delete", e.data));

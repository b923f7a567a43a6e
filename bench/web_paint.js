// web_paint.js - bench/bench_web.sh's browser part: the status page with N
// decofiles in Debian's chromium (playwright-core): first paint, first
// row, all rows; then REPS condition changes written by WRITE (a shell
// command taking STATUS REASON MESSAGE) and the time each takes to show in
// the row, measured in the page by a MutationObserver against the time
// the write returned (and the time it began, an upper bound).
"use strict";
const { chromium } = require("playwright-core");
const { execSync } = require("child_process");

const med = (a) => { const s = a.slice().sort((x, y) => x - y); return s[Math.floor((s.length - 1) / 2)]; };
const fmt = (a) => "median " + med(a).toFixed(1) + " ms, max " + Math.max(...a).toFixed(1) + " ms (n=" + a.length + ")";

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM, args: ["--no-sandbox", "--disable-gpu"] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const n = Number(process.env.N);
  const fcp = [], first = [], all = [], inFirst = [], inAll = [];
  // in the page: when the first row and the Nth are in the table, and the
  // frame after each (performance.now(), from navigation start), seen by
  // a MutationObserver; playwright's own checks below wait for the page's
  // main thread, so they also count the drawing that follows
  await page.addInitScript((n) => {
    window.__rows = {};
    new MutationObserver(() => {
      const c = document.querySelectorAll("#decofiles tbody tr").length;
      const mark = (k) => { if (window.__rows[k] === undefined) { window.__rows[k] = -1; requestAnimationFrame(() => { window.__rows[k] = performance.now(); }); } };
      if (c > 0) mark("first");
      if (c >= n) mark("all");
    }).observe(document, { childList: true, subtree: true });
  }, n);
  for (let k = 0; k < 3; k++) {
    const t0 = Date.now();
    await page.goto(process.env.BASE + "/");
    await page.waitForSelector("#decofiles tbody tr", { timeout: 60000 });
    first.push(Date.now() - t0);
    await page.waitForFunction((n) => document.querySelectorAll("#decofiles tbody tr").length >= n, n,
      { timeout: 60000, polling: 20 });
    all.push(Date.now() - t0);
    await page.waitForFunction(() => window.__rows.all > 0, null, { timeout: 60000 });
    const m = await page.evaluate(() => window.__rows);
    inFirst.push(m.first);
    inAll.push(m.all);
    fcp.push(await page.evaluate(() => {
      const e = performance.getEntriesByName("first-contentful-paint")[0];
      return e ? e.startTime : -1;
    }));
  }
  console.log("3. chromium, first contentful paint: " + fmt(fcp));
  console.log("   first row drawn (from navigation, playwright's check): " + fmt(first));
  console.log("   all " + n + " rows drawn (from navigation, playwright's check): " + fmt(all));
  console.log("   in the page, the frame after the first row is in the table: " + fmt(inFirst));
  console.log("   in the page, the frame after all " + n + " are: " + fmt(inAll));

  const key = "sites-07/loja-00007";
  const lat = [], upper = [];
  for (let i = 0; i < Number(process.env.REPS); i++) {
    const want = i % 2 ? "True" : "False";
    await page.evaluate((key) => {
      window.__seen = 0;
      const tb = document.querySelector("#decofiles tbody");
      const cellOf = () => { const tr = tb.querySelector('tr[data-key="' + key + '"]'); return tr && tr.querySelector('td[data-label="Ready"]'); };
      window.__want = null;
      const obs = new MutationObserver(() => {
        const c = cellOf();
        if (!window.__seen && c && c.textContent === window.__want) { window.__seen = Date.now(); obs.disconnect(); }
      });
      obs.observe(tb, { childList: true, subtree: true, characterData: true });
    }, key);
    await page.evaluate((w) => { window.__want = w; }, want);
    const t0 = Date.now();
    execSync(process.env.WRITE + " " + want + " " + (want === "True" ? "Published" : "UnsupportedTarget") + " 'bench change " + i + "'");
    const t1 = Date.now();
    await page.waitForFunction(() => window.__seen > 0, null, { timeout: 20000, polling: 10 });
    const seen = await page.evaluate(() => window.__seen);
    lat.push(seen - t1);
    upper.push(seen - t0);
    await page.waitForTimeout(300);
  }
  console.log("4. condition written -> row changed in the page (SSE): " + fmt(lat));
  console.log("   the same from the start of the writing process (an upper bound): " + fmt(upper));
  await browser.close();
})().catch((e) => { console.log("bench failed: " + e); process.exit(1); });

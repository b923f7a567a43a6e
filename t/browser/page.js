// page.js - the status page in Debian's chromium, driven by playwright-core
// (t/integration/web_page.sh runs it; no browser is downloaded).  TAP out.
//   BASE       the web stage's URL
//   NS         the namespace of the Decofiles
//   EDIT_CMD   a shell command that changes Decofile loja's content
//   SHOTS      a folder for screenshots (optional)
"use strict";
const { ok, done, launch } = require("./tap.js");
const { execSync } = require("child_process");

(async () => {
  const browser = await launch();
  const page = await browser.newPage({ viewport: { width: 1280, height: 600 } });
  const outside = [];
  page.on("request", (r) => { if (!r.url().startsWith(process.env.BASE)) outside.push(r.url()); });
  const t0 = Date.now();
  await page.goto(process.env.BASE + "/");
  await page.waitForSelector("#decofiles tbody tr", { timeout: 15000 });
  console.log("# first rows " + (Date.now() - t0) + " ms after navigation");
  const names = await page.$$eval("#decofiles tbody tr", (trs) => trs.map((t) => t.dataset.key));
  ok(names.length === 2, "the table has a row per decofile (" + names.join(", ") + ")");
  ok(names[0] === process.env.NS + "/broken", "the failing one comes first");
  const msg = await page.textContent("#decofiles tbody tr.failing .msg");
  ok(msg && msg.includes("<script>alert(1)<img src=x onerror=window.__xss=1>"),
    "its message shows the block name's <script> and <img> as text");
  const injected = await page.evaluate(() =>
    document.querySelectorAll("#decofiles script, #decofiles img").length + (window.__xss ? 1 : 0));
  ok(injected === 0, "no element was made from it, nothing ran");
  ok(await page.textContent("#conn") === "live", "the page says it is live");
  const podsSel = '#decofiles tbody tr[data-key="' + process.env.NS + '/loja"] td[data-label="Pods notified"]';
  const pods = await page.waitForFunction((sel) => {
    const td = document.querySelector(sel);
    return td && td.textContent === "1/1" && td.querySelector(".bar > span") ? td.textContent : null;
  }, podsSel, { timeout: 20000 }).then((h) => h.jsonValue()).catch(() => null);
  ok(pods === "1/1", "loja's replicas confirmed show as 1/1 with a bar");
  if (process.env.SHOTS)
    await page.screenshot({ path: process.env.SHOTS + "/web-status.png", fullPage: true });

  // filters
  await page.selectOption("#f-state", "ready");
  let shown = await page.$$eval("#decofiles tbody tr", (trs) => trs.map((t) => t.dataset.key));
  ok(shown.length === 1 && shown[0] === process.env.NS + "/loja", "the state filter keeps the ready one");
  await page.selectOption("#f-state", "");

  // a change without a reload
  const hashOf = () => page.textContent('#decofiles tbody tr[data-key="' + process.env.NS + '/loja"] td[data-label="Content hash"]');
  const before = await hashOf();
  await page.evaluate(() => { window.__sameDocument = true; });
  const t1 = Date.now();
  execSync(process.env.EDIT_CMD, { stdio: "inherit" });
  let after = before;
  while (Date.now() - t1 < 30000 && after === before) {
    await page.waitForTimeout(50);
    after = await hashOf();
  }
  ok(after !== before && after !== "-", "the row's content hash changed (" + before + " -> " + after + ")");
  console.log("# row changed " + (Date.now() - t1) + " ms after the edit was written");
  ok(await page.evaluate(() => window.__sameDocument === true), "... without a reload");

  // a phone
  await page.setViewportSize({ width: 390, height: 844 });
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  ok(wide <= 390, "on a phone nothing scrolls sideways (" + wide + " px)");
  if (process.env.SHOTS)
    await page.screenshot({ path: process.env.SHOTS + "/web-status-phone.png", fullPage: true });

  // the detail page
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(process.env.BASE + "/decofiles/" + process.env.NS + "/broken");
  await page.waitForSelector("#conditions tbody tr", { timeout: 10000 });
  const conds = await page.textContent("#conditions tbody");
  ok(conds.includes("ValidationError"), "the detail page lists the conditions");
  ok(conds.includes("<script>alert(1)<img"), "... with the message as text");
  ok(await page.evaluate(() => document.querySelectorAll("main script, main img").length === 0 && !window.__xss),
    "... and nothing made of it");
  ok(outside.length === 0, "nothing was fetched from elsewhere" + (outside.length ? ": " + outside.join(" ") : ""));
  await browser.close();
  done();
})().catch((e) => { console.log("Bail out! " + e); process.exit(1); });

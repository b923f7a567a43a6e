// template.js - a decofile page's templates, pending change and "Apply
// template update" in Debian's chromium, driven by playwright-core
// (t/integration/web_template.sh runs it while Manual site "man" holds
// generation 1 of template "base" and 2 is fetched).  TAP out.
//   BASE    the web stage's URL      NS     the namespace
//   TOKEN   the bearer token         SHOTS  a folder for screenshots (optional)
"use strict";
const { ok, done, launch } = require("./tap.js");

(async () => {
  const browser = await launch();
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const url = process.env.BASE + "/decofiles/" + process.env.NS + "/man";
  await page.goto(url);
  await page.waitForSelector("#templates tbody tr", { timeout: 15000 });
  const row = await page.$$eval("#templates tbody tr td", (tds) => tds.map((t) => t.textContent));
  ok(row[0] === "base" && row[1] === "1" && row[2] === "2" && row[3] === "pending" && row[4] === "Manual",
    "the template row: base, the site at 1, the newest 2, pending, Manual (" + row.join(" | ") + ")");
  await page.waitForSelector("#pending tbody tr", { timeout: 10000 });
  const pend = await page.$$eval("#pending tbody tr td", (tds) => tds.map((t) => t.textContent));
  ok(pend[0] === "changed" && pend[1] === "Tema da Loja" && pend[2] === "~colors.primary",
    "the pending change: block Tema da Loja, key colors.primary (" + pend.join(" | ") + ")");
  const sum = await page.textContent("#pending-summary");
  ok(sum.includes("generation 1 → 2") && sum.includes("1 block changed (1 key)"),
    "the summary names the generations and sums it up (" + sum + ")");
  if (process.env.SHOTS)
    await page.screenshot({ path: process.env.SHOTS + "/web-template.png", fullPage: true });

  const result = async () => {
    await page.waitForFunction(() => document.getElementById("action-result").dataset.status, null,
      { timeout: 10000 });
    const r = await page.evaluate(() => {
      const e = document.getElementById("action-result");
      const s = e.dataset.status;
      delete e.dataset.status;
      return { s, t: e.textContent };
    });
    return r;
  };
  await page.fill("#token", "not-" + process.env.TOKEN);
  await page.click("#do-apply");
  let r = await result();
  ok(r.s === "401", "a wrong token: the page shows 401 (" + r.t + ")");
  await page.fill("#token", process.env.TOKEN);
  await page.click("#do-apply");
  r = await result();
  ok(r.s === "202" && r.t.includes("template update requested"), "the right token: 202 (" + r.t + ")");

  // the site takes generation 2: reload until the page says so
  let state = "";
  const t0 = Date.now();
  while (Date.now() - t0 < 30000) {
    await page.goto(url);
    await page.waitForSelector("#templates tbody tr", { timeout: 15000 });
    state = (await page.$$eval("#templates tbody tr td", (tds) => tds.map((t) => t.textContent))).join(" | ");
    if (state.startsWith("base | 2 | 2 | adopted")) break;
    await page.waitForTimeout(200);
  }
  ok(state.startsWith("base | 2 | 2 | adopted"), "after the apply the page shows base adopted at 2 (" + state + ")");
  await page.waitForFunction(() => document.getElementById("pending-summary").textContent !== "-", null,
    { timeout: 10000 });
  const after = await page.textContent("#pending-summary");
  ok(after === "nothing pending", "... and nothing pending (" + after + ")");
  await browser.close();
  done();
})().catch((e) => { console.log("Bail out! " + e); process.exit(1); });

// rollout.js - a decofile page's Templates row for a site whose template
// rollout halted, in Debian's chromium driven by playwright-core
// (t/integration/template_wave_timeout.sh runs it once the canary FAILED
// failed and HALTED's wave was halted).  TAP out.
//   BASE    the web stage's URL      NS      the namespace
//   FAILED  the failed canary        HALTED  a site the rollout halted before
//   WHY     the canary's reason      SHOTS   a folder for screenshots (optional)
"use strict";
const { ok, done, launch } = require("./tap.js");

// row - the Templates row of a site's page: its cells, class, state and background
async function row(page, site) {
  await page.goto(process.env.BASE + "/decofiles/" + process.env.NS + "/" + site);
  await page.waitForSelector("#templates tbody tr", { timeout: 15000 });
  return page.$eval("#templates tbody tr", (tr) => ({
    cells: [...tr.querySelectorAll("td")].map((t) => t.textContent),
    cls: tr.className,
    state: tr.dataset.state,
    bg: getComputedStyle(tr.querySelector("td")).backgroundColor,
  }));
}

(async () => {
  const browser = await launch();
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  // the failing colour of style.css (tr.failing td)
  const red = "rgb(253, 236, 234)";

  const f = await row(page, process.env.FAILED);
  ok(f.cells[0] === "base" && f.cells[3] === "failed" && f.state === "failed",
    "the canary's row says failed (" + f.cells.join(" | ") + ")");
  ok(f.cells[6] === "0", "... in wave 0 (" + f.cells[6] + ")");
  ok(f.cells[7] === process.env.WHY, "... with the reason (" + f.cells[7] + ")");
  ok(f.cls === "failing" && f.bg === red, "... highlighted as failing (" + f.cls + ", " + f.bg + ")");
  if (process.env.SHOTS)
    await page.screenshot({ path: process.env.SHOTS + "/web-rollout-failed.png", fullPage: true });

  const h = await row(page, process.env.HALTED);
  ok(h.cells[0] === "base" && h.cells[3] === "halted" && h.state === "halted",
    "a later wave's site says halted (" + h.cells.join(" | ") + ")");
  ok(h.cells[7] === "-", "... with no reason of its own");
  ok(h.cls === "failing" && h.bg === red, "... highlighted as failing (" + h.cls + ", " + h.bg + ")");
  await browser.close();
  done();
})().catch((e) => { console.log("Bail out! " + e); process.exit(1); });

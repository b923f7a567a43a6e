// tap.js - what a t/browser script needs besides its steps: TAP lines
// (ok, done) and Debian's chromium launched headless for playwright-core
// (CHROMIUM its path).
"use strict";
const { chromium } = require("playwright-core");

let n = 0, failed = 0;
function ok(cond, what) {
  n++;
  if (!cond) failed++;
  console.log((cond ? "ok " : "not ok ") + n + " - " + what);
}

// done - the plan line, and exit 1 when a test failed
function done() {
  console.log("1.." + n);
  process.exit(failed ? 1 : 0);
}

function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu"],
  });
}

module.exports = { ok, done, launch };

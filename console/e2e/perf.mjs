// The log view with 50,000+ lines (against e2e/mock-server.mjs: a cluster named big-… logs 51,000 lines):
// rows in the DOM stay bounded, scrolling the whole log keeps frames short, search and download work.
// Env: CONSOLE_URL, TOKEN_A (as run.mjs). Exit non-zero on failure.
import { execSync } from "node:child_process";
import { chromium } from "playwright-core";

const { CONSOLE_URL, TOKEN_A } = process.env;
const fail = (m) => { console.error(`perf FAILED: ${m}`); process.exit(1); };
if (!CONSOLE_URL || !TOKEN_A) fail("set CONSOLE_URL and TOKEN_A");
const exe = process.env.CHROMIUM ?? execSync("command -v chromium", { shell: "/bin/sh" }).toString().trim();
const base = CONSOLE_URL.replace(/\/$/, "");
const r = await fetch(`${base}/v1/clusters`, {
  method: "POST",
  headers: { Authorization: `Bearer ${TOKEN_A}`, "Content-Type": "application/json" },
  body: JSON.stringify({ name: `big-${Date.now().toString(36)}`, template: { name: "aws-eks-basic", version: "1.1.0" }, provider: "aws", region: "us-east-1", variables: {} }),
});
if (r.status !== 202) fail(`create answered ${r.status}: ${await r.text()}`);
const { operation } = await r.json();
const browser = await chromium.launch({ executablePath: exe, args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"] });
try {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: true })).newPage();
  await page.goto(`${base}/operations/${operation.id}#token=${encodeURIComponent(TOKEN_A)}`);
  const log = page.getByRole("log");
  const count = async () => Number(/(\d+) lines/.exec((await log.getAttribute("aria-label")) ?? "")?.[1] ?? 0);
  const t0 = Date.now();
  let maxRows = 0;
  while ((await count()) < 50_000) {
    if (Date.now() - t0 > 120_000) fail(`only ${await count()} lines after 120 s`);
    maxRows = Math.max(maxRows, await page.locator(".log-row").count());
    await new Promise((r) => setTimeout(r, 250));
  }
  console.log(`50,000 lines in ${((Date.now() - t0) / 1000).toFixed(1)} s while following; at most ${maxRows} rows in the DOM`);
  await page.getByTestId("op-status").getByText("succeeded").waitFor({ timeout: 60_000 });
  const n = await count();
  const frames = await page.evaluate(async () => {
    const el = document.querySelector(".log");
    const times = [];
    let last = performance.now();
    const max = el.scrollHeight - el.clientHeight;
    for (let i = 0; i <= 120; i++) {
      el.scrollTop = (max * i) / 120;
      el.dispatchEvent(new Event("scroll"));
      await new Promise((r) => requestAnimationFrame(r));
      const now = performance.now();
      times.push(now - last);
      last = now;
    }
    times.sort((a, b) => a - b);
    return { p50: times[60], p95: times[114], max: times[120], rows: document.querySelectorAll(".log-row").length };
  });
  console.log(`${n} lines; scroll through in 120 jumps: frame p50 ${frames.p50.toFixed(1)} ms, p95 ${frames.p95.toFixed(1)} ms, max ${frames.max.toFixed(1)} ms; ${frames.rows} rows in the DOM`);
  if (frames.rows > 400) fail(`${frames.rows} rows in the DOM: not virtualized`);
  if (frames.p95 > 50) fail(`p95 frame ${frames.p95.toFixed(1)} ms`);
  const s0 = Date.now();
  await page.getByLabel("Search log").fill("resource 49999");
  await page.getByText(/of \d+ matches/).waitFor();
  console.log(`search over ${n} lines: ${Date.now() - s0} ms (${await page.getByText(/of \d+ matches/).textContent()})`);
  const [dl] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: /Download log/ }).click()]);
  const text = await (await dl.createReadStream()).toArray().then((c) => Buffer.concat(c).toString());
  const lines = text.split("\n").filter(Boolean).length;
  if (lines !== n) fail(`download has ${lines} lines, the view ${n}`);
  if (text.includes("\x1b[")) fail("download has escape codes");
  console.log(`download: ${lines} lines, ${text.length} bytes`);
  console.log("perf passed");
} finally {
  await browser.close();
}

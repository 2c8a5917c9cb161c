// End-to-end check of the console against a running stack (devstack, or e2e/mock-server.mjs).
// Env: CONSOLE_URL (e.g. http://127.0.0.1:18080), TOKEN_A and TOKEN_B (JWTs of two tenants),
// CHROMIUM (default: `command -v chromium`), E2E_TIMEOUT_MS (per long wait; default 300000).
// Flow: tenant A creates a cluster through the form (an invalid node_count first → the error beside the
// field; fixed → the estimate; confirm), follows the live log to succeeded / ACTIVE, deletes it by typing
// its name, sees it DELETED or gone; tenant B does not see it. axe-core runs on every page (serious or
// critical violations fail the run); a screenshot of each page goes to e2e/artifacts/<page>.png.
// With TOKEN_APPROVER (another principal of tenant A with the operations:approve scope), the create asks
// for approval: the operation waits with its plan (summary, changes), A's own approve is refused
// (self-approval), the clusters list marks the cluster, the approver approves with a comment, the create
// goes on; then the cluster page's approval mode is changed to auto and back to the default.
// With TOKEN_OPERATOR (the platform operator's token): the operator's console — tenants with their usage, a
// tenant registered (a bad quota refused beside its field first), its settings changed, suspended with a
// reason and resumed, each action in its audit log under the operator; every tenant's clusters and operations,
// filtered;
// the catalog with a version deprecated; a rollout form refused for selecting nothing; and tenant A's token
// refused on the operator's pages.
// With E2E_ROLLOUT (the id of tenant A's rollout paused by a failed cluster, as the mock server starts with):
// the rollout page shows the fleet summary, each cluster's plan with its replaced addresses and the reason it
// paused; "Resume without the failed" finishes it (the failed cluster skipped). E2E_ONLY=rollout stops
// there (the workspace test runs that part against the mock server, whose rollout is paused from the start).
import { execSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";
import { operatorSteps } from "./operator-steps.mjs";
import { rolloutSteps } from "./rollout-steps.mjs";

const require = createRequire(import.meta.url);
const AXE = fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
// Screenshots: E2E_ARTIFACTS (the workspace test sets target/console-screenshots), else e2e/artifacts.
const ART = (process.env.E2E_ARTIFACTS ?? new URL("./artifacts/", import.meta.url).pathname).replace(/\/?$/, "/");
const { CONSOLE_URL, TOKEN_A, TOKEN_B, TOKEN_APPROVER, TOKEN_OPERATOR, E2E_ROLLOUT, E2E_ONLY } = process.env;
const LONG = Number(process.env.E2E_TIMEOUT_MS ?? 300_000);

function fail(msg) {
  console.error(`e2e FAILED: ${msg}`);
  process.exit(1);
}
if (!CONSOLE_URL || !TOKEN_A || !TOKEN_B) fail("set CONSOLE_URL, TOKEN_A and TOKEN_B");
const base = CONSOLE_URL.replace(/\/$/, "");
let exe = process.env.CHROMIUM;
if (!exe) {
  try { exe = execSync("command -v chromium || command -v chromium-browser", { shell: "/bin/sh" }).toString().trim(); } catch { /* below */ }
}
if (!exe) fail("no chromium found (set CHROMIUM)");
fs.mkdirSync(ART, { recursive: true });

// After a submit that queues an operation: its page, or the problem the page shows instead. The api answers
// in well under a second; the wait is long because a loaded 2-core machine (every tier at once) stalls a
// debug build, and a timeout names what the page said.
async function toOperationPage(page) {
  try {
    await page.waitForURL(/\/operations\//, { timeout: 90_000 });
  } catch (e) {
    const said = (await page.locator(".problem").allTextContents().catch(() => [])).join(" | ");
    fail(`no operation page after the submit (${said ? `the page says: ${said}` : "no problem shown"}): ${e.message.split("\n")[0]}`);
  }
}

const a11y = [];
const step = (s) => console.log(`• ${s}`);

async function check(page, name) {
  await page.screenshot({ path: `${ART}${name}.png`, fullPage: true });
  if (!(await page.evaluate(() => typeof window.axe !== "undefined"))) await page.addScriptTag({ content: AXE });
  const r = await page.evaluate(async () => {
    const res = await window.axe.run(document, { resultTypes: ["violations"] });
    return res.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) }));
  });
  const bad = r.filter((v) => v.impact === "serious" || v.impact === "critical");
  console.log(`  axe ${name}: ${r.length} violation(s), ${bad.length} serious/critical; screenshot ${name}.png`);
  for (const v of r) console.log(`    ${v.impact} ${v.id} — ${v.help} (${v.nodes.join(", ")})`);
  if (bad.length) a11y.push(...bad.map((v) => `${name}: ${v.impact} ${v.id} — ${v.help} at ${v.nodes.join(", ")}`));
}

/** The product pages at the widths people use: <name>-1366.png and <name>-1920.png (full page), then back. */
async function shots(page, name) {
  const was = page.viewportSize();
  for (const [w, h] of [[1366, 768], [1920, 1080]]) {
    await page.setViewportSize({ width: w, height: h });
    await new Promise((r) => setTimeout(r, 150));
    await page.screenshot({ path: `${ART}${name}-${w}.png`, fullPage: true });
  }
  if (was) await page.setViewportSize(was);
  console.log(`  screenshots ${name}-1366.png, ${name}-1920.png`);
}

async function heading(page, re, timeout = 30_000) {
  await page.getByRole("heading", { level: 1, name: re }).waitFor({ timeout });
}

/** The text of the messages tied to an input (aria-describedby → `…-err`). */
async function fieldErrors(page, input) {
  const ids = ((await input.getAttribute("aria-describedby")) ?? "").split(/\s+/).filter((x) => x.endsWith("-err"));
  if (!ids.length) return "";
  return ((await page.locator(`[id="${ids[0]}"]`).innerText()) ?? "").replace(/\s*\n\s*/g, " | ");
}

async function waitFor(what, fn, timeout = LONG, every = 500) {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    try { last = await fn(); if (last === true) return; } catch (e) { last = e.message; }
    await new Promise((r) => setTimeout(r, every));
  }
  fail(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
}

const browser = await chromium.launch({
  executablePath: exe,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
});
try {
  const ctxA = await browser.newContext({ viewport: { width: 1366, height: 900 }, bypassCSP: true, acceptDownloads: true });
  const page = await ctxA.newPage();
  const consoleErrors = [];
  page.on("pageerror", (e) => consoleErrors.push(e.message));

  step("tenant A opens the console with #token= → the dashboard");
  await page.goto(`${base}/#token=${encodeURIComponent(TOKEN_A)}`);
  await heading(page, /^Dashboard$/);
  if (page.url().includes("token=")) fail("the token stayed in the URL");
  await page.getByTestId("dash-cost").waitFor({ timeout: 30_000 });
  for (const id of ["dash-cluster-count", "dash-in-flight", "dash-failures"]) {
    const t = ((await page.getByTestId(id).textContent()) ?? "").trim();
    if (!/^\d+$/.test(t)) fail(`dashboard ${id}: ${t}`);
  }
  if (!/estimated/i.test((await page.getByTestId("dash-cost").getAttribute("title")) ?? "")) fail("the month-to-date cost does not say how it is estimated");
  await check(page, "dashboard");

  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Clusters" }).click();
  await heading(page, /^Clusters$/);
  await page.getByText(/clusters?, refreshed|No clusters yet/).first().waitFor();
  await check(page, "clusters");
  if (E2E_ROLLOUT) {
    await rolloutSteps(page, E2E_ROLLOUT, { step, heading, waitFor, check, shots, fail });
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Clusters" }).click();
    await heading(page, /^Clusters$/);
    if (consoleErrors.length) fail(`page errors: ${consoleErrors.join("; ")}`);
    if (E2E_ONLY === "rollout") {
      if (a11y.length) fail(`accessibility (serious/critical):\n  ${a11y.join("\n  ")}`);
      console.log(`e2e passed (the rollout page only); screenshots in ${ART}`);
      await browser.close();
      process.exit(0);
    }
  } else console.log("  (no E2E_ROLLOUT: the rollout page steps are skipped)");

  step("create form for aws-eks-basic: sections, human labels, catalog selects");
  await page.getByRole("main").getByRole("link", { name: "New cluster" }).click();
  await heading(page, /^New cluster$/);
  await page.getByLabel("Template", { exact: true }).selectOption("aws-eks-basic");
  const nodeCount = page.getByLabel("Number of nodes", { exact: true });
  await nodeCount.waitFor({ timeout: 30_000 });
  for (const legend of ["Cluster", "Kubernetes", "Nodes", "Network"]) {
    if (!(await page.locator("legend", { hasText: new RegExp(`^${legend}$`) }).count())) fail(`no "${legend}" section in the create form`);
  }
  const size = page.getByLabel("Node size", { exact: true });
  if ((await size.evaluate((e) => e.tagName)) !== "SELECT") fail("the node size is not a select");
  if (!(await size.locator("option", { hasText: /t3\.medium — 2 vCPU/ }).count())) fail("the node sizes have no vCPU/memory labels");
  if ((await page.getByLabel("Region", { exact: true }).evaluate((e) => e.tagName)) !== "SELECT") fail("the region is not a select");
  if (await page.getByText(/\\d\{1,3\}/).count()) fail("a regex is shown on the create form");
  const name = `e2e-${Date.now().toString(36)}`;
  await page.getByLabel("Cluster name").fill(name);
  const region = await page.getByLabel("Region", { exact: true }).inputValue();
  if (!region) fail("the region has no default");
  await page.getByLabel("Provider").selectOption("aws");
  if (TOKEN_APPROVER) {
    step("approval required for this cluster");
    await page.getByTestId("create-approval").selectOption("required");
  } else console.log("  (no TOKEN_APPROVER: the approval steps are skipped)");

  step("node_count = 500 → the error beside the field");
  await nodeCount.fill("500");
  await waitFor("the client-side error on node_count", async () => /100/.test(await fieldErrors(page, nodeCount)) || (await fieldErrors(page, nodeCount)), 10_000);
  await page.getByRole("button", { name: /Estimate cost/ }).click();
  await waitFor("the API's error (with allowed) on node_count", async () => /allowed/.test(await fieldErrors(page, nodeCount)) || (await fieldErrors(page, nodeCount)), 30_000);
  if ((await nodeCount.getAttribute("aria-invalid")) !== "true") fail("node_count is not aria-invalid");
  const shownErr = (await fieldErrors(page, nodeCount)).trim();
  console.log(`  node_count errors: ${shownErr}`);
  if (shownErr.includes(" | ")) fail(`node_count shows more than one error: ${shownErr}`);
  await check(page, "create-errors");
  await shots(page, "create");

  {
    // A sensitive variable (the mock's template has one): typed, never shown in the clear elsewhere on the page.
    const secret = page.locator('form[aria-label="Create cluster"] input[type="password"]').first();
    if (await secret.count()) {
      await secret.fill("e2e-secret-value-123");
      await new Promise((r) => setTimeout(r, 200));
      if ((await page.locator("body").innerText()).includes("e2e-secret-value-123")) fail("a sensitive value is shown in the clear on the create page");
      console.log("  a sensitive variable is typed and shown nowhere");
    }
  }
  step("fix it (2), estimate");
  await nodeCount.fill("2");
  await waitFor("node_count's error to clear", async () => (await fieldErrors(page, nodeCount)) === "" || (await fieldErrors(page, nodeCount)), 10_000);
  await page.getByRole("button", { name: /Estimate cost|Estimate again/ }).click();
  await page.getByRole("heading", { name: "Cost estimate" }).waitFor({ timeout: LONG });
  const total = await page.locator(".estimate .total").textContent().catch(() => null);
  const createBtn = page.getByRole("button", { name: `Create cluster ${name}` });
  if (!total) {
    const why = await page.locator(".estimate .problem").textContent().catch(() => "");
    fail(`no estimate: ${why}`);
  }
  console.log(`  ${total.trim()}`);
  await check(page, "create-estimate");

  step("confirm the create → operation page with the live log");
  await createBtn.click();
  await toOperationPage(page);
  await heading(page, /^Operation create/);
  const log = page.getByRole("log");
  const lineCount = async () => Number(/(\d+) lines/.exec((await log.getAttribute("aria-label")) ?? "")?.[1] ?? 0);
  await waitFor("log lines to arrive", async () => (await lineCount()) > 0 || `${await lineCount()} lines`, LONG);
  const firstCount = await lineCount();
  await check(page, "operation");
  await shots(page, "operation-running");
  const opStatus = page.getByTestId("op-status");
  const clState = page.getByTestId("cluster-state");
  if (TOKEN_APPROVER) {
    step("the create waits with its plan; A's own approve is refused (self-approval)");
    const opPath = new URL(page.url()).pathname;
    await waitFor("the create to await approval", async () => {
      const s = (await opStatus.textContent())?.trim();
      if (s === "failed" || s === "cancelled" || s === "succeeded") fail(`the create ${s} instead of awaiting approval`);
      return s === "awaiting approval" || s;
    }, LONG, 1000);
    await page.getByTestId("approval").waitFor();
    const summary = ((await page.getByTestId("approval-summary").textContent()) ?? "").trim();
    if (!/\d+ to add, \d+ to change, \d+ to destroy/.test(summary)) fail(`approval summary: ${summary}`);
    const changes = await page.getByTestId("approval-changes").getByRole("row").count();
    if (changes < 2) fail(`the plan's changes table has ${changes} row(s)`);
    console.log(`  ${summary}; ${changes - 1} resource(s) listed`);
    await check(page, "operation-approval");
    await page.getByTestId("approval-comment").fill("approving my own change");
    await page.getByTestId("approve").click();
    const refused = page.getByTestId("approval-error");
    await refused.waitFor({ timeout: 15_000 });
    const why = ((await refused.textContent()) ?? "").trim();
    if (!/separation of duties/.test(why)) fail(`self-approval not explained: ${why}`);
    console.log(`  refused: ${why.slice(0, 120)}…`);
    if ((await opStatus.textContent())?.trim() !== "awaiting approval") fail("the operation moved after a refused approve");

    step("the clusters list marks the cluster; the mark opens the operation");
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Clusters" }).click();
    await heading(page, /^Clusters$/);
    const row = page.getByRole("row").filter({ has: page.getByRole("link", { name, exact: true }) });
    await row.getByTestId("awaiting-approval").waitFor({ timeout: 15_000 });
    await check(page, "clusters-awaiting");
    await row.getByTestId("awaiting-approval").click();
    await page.waitForURL((u) => u.pathname === opPath, { timeout: 15_000 });
    await heading(page, /^Operation create/);

    step("an approver of tenant A approves it with a comment");
    const ctxP = await browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
    const pp = await ctxP.newPage();
    pp.on("pageerror", (e) => consoleErrors.push(`approver: ${e.message}`));
    await pp.goto(`${base}${opPath}#token=${encodeURIComponent(TOKEN_APPROVER)}`);
    await heading(pp, /^Operation create/);
    await pp.getByTestId("approval-comment").fill("plan checked by e2e");
    await pp.getByTestId("approve").click();
    const decision = pp.getByTestId("approval-decision");
    await decision.waitFor({ timeout: 30_000 });
    const d = ((await decision.textContent()) ?? "").trim();
    if (!/^Approved by/.test(d) || !d.includes("plan checked by e2e")) fail(`decision: ${d}`);
    console.log(`  ${d}`);
    if (await pp.getByTestId("approve").count()) fail("approve is still offered after the decision");
    await check(pp, "operation-approved");
    await ctxP.close();
    await page.getByTestId("approval-decision").waitFor({ timeout: 30_000 });
  }
  await waitFor("the operation to succeed and the cluster to be ACTIVE", async () => {
    const s = (await opStatus.textContent())?.trim();
    if (s === "failed" || s === "cancelled") {
      const err = await page.locator(".problem").first().textContent().catch(() => "");
      fail(`the create ${s}: ${err}`);
    }
    const c = (await clState.textContent())?.trim();
    return (s === "succeeded" && c === "ACTIVE") || `${s}/${c}`;
  }, LONG, 1000);
  const endCount = await lineCount();
  console.log(`  log: ${firstCount} lines when first seen, ${endCount} at the end`);
  if (endCount <= firstCount) console.log("  (the log did not grow while watched: the operation may have been fast)");
  step("finished operation: plan summary, no Pause, cost table");
  await waitFor("the plan summary", async () => /\+\d+ ~\d+ −\d+/.test((await page.getByTestId("plan-summary").textContent()) ?? "") || (await page.getByTestId("plan-summary").textContent()), 30_000);
  console.log(`  plan: ${((await page.getByTestId("plan-summary").textContent()) ?? "").trim()}`);
  await page.getByText("The log is complete").waitFor({ timeout: 60_000 });
  if (await page.getByRole("button", { name: /^(Pause|Follow)$/ }).count()) fail("a finished log still offers Pause/Follow");
  await page.getByLabel("Search log").fill("apply");
  await check(page, "operation-done");
  await shots(page, "operation");

  step("dashboard with the cluster: counted, its cost this month estimated");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Dashboard" }).click();
  await heading(page, /^Dashboard$/);
  await waitFor("the dashboard to count the cluster", async () => Number((await page.getByTestId("dash-cluster-count").textContent()) ?? 0) >= 1 || (await page.getByTestId("dash-cluster-count").textContent()), 30_000);
  const cost = ((await page.getByTestId("dash-cost").textContent()) ?? "").trim();
  console.log(`  clusters ${(await page.getByTestId("dash-cluster-count").textContent())?.trim()}, cost this month ${cost}`);
  if (!/\d/.test(cost)) fail(`no month-to-date estimate for a cluster whose create had an estimate: ${cost}`);
  await check(page, "dashboard-with-cluster");
  await shots(page, "dashboard");
  await page.goBack();
  await heading(page, /^Operation create/);

  step("cluster page, delete by typing the name");
  await page.getByRole("main").getByRole("link", { name }).first().click();
  await heading(page, new RegExp(`^Cluster ${name}$`));
  await page.getByRole("heading", { name: "Outputs" }).waitFor();
  const tabs = page.getByRole("navigation", { name: "Cluster sections" });
  for (const t of ["Overview", "Variables", "Operations", "State", "Settings"]) if (!(await tabs.getByRole("link", { name: t }).count())) fail(`no ${t} tab`);
  if (await page.getByRole("button", { name: "Delete cluster" }).count()) fail("delete is on the overview (it belongs in Settings)");
  step("Connect panel");
  const cmd = ((await page.getByTestId("connect-command").textContent()) ?? "").trim();
  if (cmd !== `strato clusters kubeconfig ${name} --merge`) fail(`connect command: ${cmd}`);
  const dl = page.getByTestId("connect").getByRole("button", { name: "Download kubeconfig" });
  await waitFor("the Connect panel to settle", async () => (await dl.isEnabled()) || (await page.getByTestId("connect-unavailable").count()) > 0 || "checking", 30_000);
  // The cluster is ACTIVE and its template says how to connect: the kubeconfig is offered, and it is one
  // for this cluster whose credentials come from `aws eks get-token` (no secret in the file).
  if (!(await dl.isEnabled())) fail(`kubeconfig not available: ${((await page.getByTestId("connect-unavailable").textContent()) ?? "").trim()}`);
  const [download] = await Promise.all([page.waitForEvent("download"), dl.click()]);
  const text = fs.readFileSync(await download.path(), "utf8");
  if (!/kind: Config/.test(text) || !text.includes(`strato-${name}`) || !/get-token/.test(text)) fail(`the downloaded kubeconfig: ${text.slice(0, 400)}`);
  if (/token:|client-key-data|password/.test(text)) fail("the kubeconfig holds a credential");
  const byHand = ((await page.getByTestId("connect-token-command").textContent()) ?? "").trim();
  if (!byHand.startsWith("aws ") || !byHand.includes("eks get-token")) fail(`token command: ${byHand}`);
  console.log(`  kubeconfig downloaded as ${download.suggestedFilename()} (${text.length} bytes)`);
  await check(page, "cluster");
  await shots(page, "cluster");
  await tabs.getByRole("link", { name: "Variables" }).click();
  await page.getByRole("heading", { name: "Variables", level: 2 }).waitFor();
  await page.getByRole("button", { name: "Update variables" }).waitFor();
  await check(page, "cluster-variables");
  await shots(page, "cluster-variables");

  step("preview an update: changes and the monthly cost difference, nothing applied");
  await page.getByRole("button", { name: "Update variables" }).click();
  const nodes = page.getByRole("form", { name: "Update variables" }).getByLabel("Number of nodes", { exact: true });
  const before = await nodes.inputValue();
  await nodes.fill(String(Number(before) + 1));
  await page.getByRole("button", { name: "Preview", exact: true }).click();
  const preview = page.getByRole("region", { name: "Preview of the change" });
  await waitFor("the preview's result", async () => (await preview.count()) > 0 || ((await page.locator(".preview-result").textContent()) ?? "").trim() || "planning", 240_000);
  const shown = ((await preview.textContent()) ?? "").replace(/\s+/g, " ");
  const diff = ((await page.getByTestId("cost-difference").textContent()) ?? "").trim();
  console.log(`  preview: ${shown.slice(0, 160)}… cost ${diff}`);
  if (!/~/.test(shown) || !/node_group/.test(shown)) fail(`the preview shows no change of the node group: ${shown}`);
  if (!/^\+\$\d+\.\d\d\/month$/.test(diff)) fail(`one more node costs more: ${diff}`);
  if (!/Nothing was applied/.test(shown)) fail("the preview does not say nothing was applied");
  await shots(page, "preview");
  await page.getByRole("button", { name: "Cancel" }).click();
  await page.getByRole("button", { name: "Update variables" }).waitFor();
  const row = ((await page.getByRole("row", { name: /Number of nodes/ }).first().textContent()) ?? "");
  if (!row.includes(before)) fail(`the cluster's node count changed after a preview: ${row} (was ${before})`);
  await tabs.getByRole("link", { name: "Settings" }).click();
  await page.getByRole("heading", { name: "Danger zone" }).waitFor();
  await check(page, "cluster-settings");
  await shots(page, "cluster-settings");

  if (TOKEN_APPROVER) {
    step("cluster approval mode: required → auto → default");
    const mode = page.getByTestId("approval-mode");
    const current = page.getByTestId("approval-mode-current");
    await waitFor("the mode to be required", async () => ((await current.textContent()) ?? "").trim() === "required" || (await current.textContent()), 15_000);
    for (const [pick, shown] of [["auto", "auto"], ["", "default (template/tenant)"]]) {
      await mode.getByLabel("Approval of plans").selectOption(pick);
      await mode.getByRole("button", { name: "Save approval mode" }).click();
      await waitFor(`the mode to be ${shown}`, async () => ((await current.textContent()) ?? "").trim() === shown || (await current.textContent()), 15_000);
    }
    await check(page, "cluster-approval");
  }

  step("cluster expiry");
  await page.getByText("Never deleted automatically.").waitFor();
  await page.getByLabel("Delete after (hours from now)").fill("48");
  await page.getByRole("button", { name: "Set expiry" }).click();
  await page.getByText(/Deleted automatically at .*\(in (4[78] h|2 days)/).waitFor({ timeout: 15_000 });
  await check(page, "cluster-expiry");
  await page.getByRole("button", { name: "Never expire" }).click();
  await page.getByText("Never deleted automatically.").waitFor({ timeout: 15_000 });

  step("preview, then apply, an update: an admin network");
  await tabs.getByRole("link", { name: "Variables" }).click();
  await page.getByRole("button", { name: "Update variables" }).click();
  const upd = page.getByRole("form", { name: "Update variables" });
  await upd.getByRole("button", { name: "Add item to Admin networks" }).click();
  await upd.getByRole("textbox", { name: "Admin networks item 1" }).fill("10.20.0.0/16");
  await upd.getByRole("button", { name: "Preview", exact: true }).click();
  await waitFor("the admin network's preview", async () => (await page.getByRole("region", { name: "Preview of the change" }).count()) > 0 || ((await page.locator(".preview-result").textContent()) ?? "").trim() || "planning", 240_000);
  const adminPreview = ((await page.getByRole("region", { name: "Preview of the change" }).textContent()) ?? "").replace(/\s+/g, " ");
  if (!/\+ ?module\.\S*security_group_rule/.test(adminPreview)) fail(`the preview shows no new security group rule: ${adminPreview}`);
  await upd.getByRole("button", { name: /^Apply changes/ }).click();
  await toOperationPage(page);
  await heading(page, /^Operation update/);
  await waitFor("the update to succeed", async () => {
    const s = (await opStatus.textContent())?.trim();
    if (s === "failed" || s === "cancelled" || s === "awaiting approval") fail(`the update ${s}`);
    return s === "succeeded" || s;
  }, LONG, 1000);
  await page.getByRole("link", { name }).first().click();
  await heading(page, new RegExp(`^Cluster ${name}$`));
  await tabs.getByRole("link", { name: "Settings" }).click();
  await page.getByRole("heading", { name: "Danger zone" }).waitFor();

  await page.getByRole("button", { name: "Delete cluster" }).click();
  const dlg = page.getByRole("dialog");
  await dlg.waitFor();
  const confirmBtn = dlg.getByRole("button", { name: "Delete cluster" });
  if (await confirmBtn.isEnabled()) fail("delete is enabled before the name is typed");
  await dlg.getByLabel(/to confirm/).fill(name);
  await check(page, "cluster-delete-dialog");
  await confirmBtn.click();
  await toOperationPage(page);
  await heading(page, /^Operation delete/);
  await waitFor("the delete to succeed", async () => {
    const s = (await opStatus.textContent())?.trim();
    if (s === "failed" || s === "cancelled") fail(`the delete ${s}`);
    return s === "succeeded" || s;
  }, LONG, 1000);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Clusters" }).click();
  await heading(page, /^Clusters$/);
  await waitFor("the cluster to be DELETED or gone", async () => {
    const row = page.getByRole("row").filter({ has: page.getByRole("link", { name, exact: true }) });
    if ((await row.count()) === 0) return true;
    const t = (await row.first().textContent()) ?? "";
    return t.includes("DELETED") || t;
  }, 60_000, 1000);
  {
    // The list names the cluster's last operation: the delete, succeeded, linking to it.
    const row = page.getByRole("row").filter({ has: page.getByRole("link", { name, exact: true }) });
    if ((await row.count()) > 0) {
      await waitFor("the row's last operation to be the succeeded delete", async () => {
        const link = row.first().getByRole("link", { name: /^delete operation op-/ });
        const t = (await row.first().textContent()) ?? "";
        return ((await link.count()) === 1 && t.includes("succeeded")) || t;
      }, 30_000, 1000);
    }
  }
  await check(page, "clusters-after-delete");

  step("audit log: names and refusal reasons");
  {
    // A create the API refuses (audited as refused, with the problem's title as the reason).
    const r = await fetch(`${base}/v1/clusters`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN_A}`, "content-type": "application/json", "idempotency-key": `e2e-refused-${Date.now()}` },
      body: JSON.stringify({ name: "Not A Name", template: { name: "aws-eks-basic" }, provider: "aws", region: "us-east-1", variables: { node_count: 500 } }),
    });
    if (r.status !== 422) fail(`the invalid create answered ${r.status}, not 422`);
  }
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Audit log" }).click();
  await heading(page, /^Audit log$/);
  await waitFor("audit entries (or the API's refusal)", async () => (await page.getByRole("row").count()) > 1 || (await page.locator(".problem").count()) > 0 || "loading", 30_000);
  if ((await page.getByRole("row").count()) > 1) {
    // The rows name clusters from a second read (the tenant's clusters, deleted ones included); until it
    // answers a row shows the cluster's id, so the name is waited for (past one re-read of the names), not read at once.
    await waitFor(`the audit log to name ${name} on its create`, async () => {
      if (await page.getByRole("row").filter({ hasText: "Create cluster" }).filter({ hasText: name }).count()) return true;
      return (await page.getByRole("row").filter({ hasText: "Create cluster" }).allTextContents()).join(" | ");
    }, 75_000);
    const refused = page.getByRole("row").filter({ hasText: "Create cluster" }).filter({ hasText: "refused" });
    await refused.first().waitFor({ timeout: 15_000 });
    const why = ((await refused.first().locator(".reason").textContent()) ?? "").trim();
    console.log(`  ${await page.getByRole("row").count() - 1} entries; the refused create says: ${why}`);
    if (!why) fail("the refused create shows no reason in the audit log");
  } else console.log(`  audit log refused: ${((await page.locator(".problem").first().textContent()) ?? "").trim()}`);
  await check(page, "audit");
  await shots(page, "audit");

  step("webhook page");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Webhook" }).click();
  await heading(page, /^Webhook$/);
  await page.getByLabel("Signing secret").waitFor();
  if ((await page.getByLabel("Signing secret").getAttribute("type")) !== "password") fail("the webhook secret is not a password input");
  await check(page, "webhook");
  if (consoleErrors.length) fail(`page errors: ${consoleErrors.join("; ")}`);

  step("cloud access page: every cloud's section; a DigitalOcean token set, never shown");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Cloud access" }).click();
  await heading(page, /^Cloud access$/);
  for (const c of ["aws", "gcp", "azure", "digitalocean", "linode"]) await page.getByTestId(`access-${c}`).waitFor();
  {
    const DO_TOKEN = "dop_v1_e2e0123456789abcdef0123456789abcdef";
    const form = page.getByRole("form", { name: "digitalocean API token" });
    if ((await form.getByLabel("API token", { exact: true }).getAttribute("type")) !== "password") fail("the cloud token is not a password input");
    await form.getByLabel("API token", { exact: true }).fill(DO_TOKEN);
    await form.getByRole("button", { name: /^(Set|Rotate) token$/ }).click();
    await form.getByText(/^A token is set/).waitFor({ timeout: 15_000 });
    if ((await form.getByLabel("API token", { exact: true }).inputValue()) !== "") fail("the token stays in its input once saved");
    if ((await page.locator("body").innerText()).includes(DO_TOKEN)) fail("the cloud token is shown on the page");
  }
  await check(page, "cloud-access");
  if (consoleErrors.length) fail(`page errors: ${consoleErrors.join("; ")}`);


  step("tenant B does not see it");
  const ctxB = await browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
  const pb = await ctxB.newPage();
  await pb.goto(`${base}/clusters#token=${encodeURIComponent(TOKEN_B)}`);
  await heading(pb, /^Clusters$/);
  await pb.getByText(/clusters?, refreshed|No clusters yet/).first().waitFor();
  await new Promise((r) => setTimeout(r, 1000));
  if ((await pb.getByRole("link", { name, exact: true }).count()) > 0) fail(`tenant B sees ${name}`);
  await check(pb, "clusters-tenant-b");

  if (TOKEN_OPERATOR) {
    await operatorSteps(browser, { base, tokenOperator: TOKEN_OPERATOR, tokenA: TOKEN_A, consoleErrors }, { step, heading, waitFor, check, shots, fail });
  }

  step("login page");
  const pl = await (await browser.newContext({ bypassCSP: true })).newPage();
  await pl.goto(`${base}/clusters`);
  await heading(pl, /^Sign in/);
  await check(pl, "login");

  if (a11y.length) fail(`accessibility (serious/critical):\n  ${a11y.join("\n  ")}`);
  console.log(`e2e passed (cluster ${name}); screenshots in ${ART}`);
} catch (e) {
  fail(e?.stack ?? String(e));
} finally {
  await browser.close();
}

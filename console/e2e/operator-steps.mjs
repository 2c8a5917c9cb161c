// The platform operator's steps of e2e/run.mjs (with TOKEN_OPERATOR): tenants with their usage, a tenant
// registered (a bad quota refused beside its field first), its settings changed, suspended with a reason and
// resumed, each action in its audit log under the operator; every tenant's clusters and operations, filtered;
// the catalog with a version deprecated; a rollout form refused for selecting nothing; and tenant A's token
// refused on the operator's pages. axe runs on each page.

export async function operatorSteps(browser, { base, tokenOperator, tokenA, consoleErrors }, { step, heading, waitFor, check, shots, fail }) {
  step("the platform operator: tenants, a new tenant's settings, suspension, the audit, every tenant's clusters");
  const po = await (await browser.newContext({ viewport: { width: 1366, height: 900 }, bypassCSP: true })).newPage();
  po.on("pageerror", (e) => consoleErrors.push(e.message));
  await po.goto(`${base}/#token=${encodeURIComponent(tokenOperator)}`);
  await heading(po, /^Tenants$/);
  if (!po.url().endsWith("/admin/tenants")) fail(`the operator lands on ${po.url()}, not /admin/tenants`);
  const nav = po.getByRole("navigation", { name: "Main" });
  if ((await nav.getByRole("link", { name: "New cluster" }).count()) > 0) fail("the operator's console shows the tenant's pages");
  await po.getByTestId("tenants").getByRole("link", { name: "console-a", exact: true }).waitFor({ timeout: 30_000 });
  const newT = `ops-${Date.now().toString(36)}`;
  const reg = po.getByRole("form", { name: "Register a tenant" });
  await reg.getByLabel("Tenant id").fill(newT);
  await reg.getByLabel("Clusters", { exact: true }).fill("0");
  await reg.getByRole("button", { name: "Register tenant" }).click();
  await reg.getByText("a whole number from 1 to 100000").waitFor({ timeout: 5_000 });
  await reg.getByLabel("Clusters", { exact: true }).fill("4");
  await reg.getByLabel("Monthly budget (USD)").fill("250");
  await check(po, "admin-tenants");
  await reg.getByRole("button", { name: "Register tenant" }).click();
  await heading(po, new RegExp(`^Tenant ${newT}$`));
  await po.getByTestId("tenant-status").getByText("Active").waitFor();
  const settings = po.getByRole("form", { name: "Tenant settings" });
  if ((await settings.getByLabel("Clusters", { exact: true }).inputValue()) !== "4") fail("the new tenant's cluster quota is not 4");
  await settings.getByLabel("Clusters", { exact: true }).fill("6");
  await settings.getByLabel("Plan approval").selectOption("required");
  await settings.getByRole("button", { name: "Save settings" }).click();
  await po.getByRole("status").filter({ hasText: /^Saved: .*max clusters.*approval/ }).waitFor({ timeout: 15_000 });
  await po.getByLabel("Reason").fill("invoice overdue: contact billing");
  await po.getByRole("button", { name: "Suspend tenant…" }).click();
  await po.getByRole("dialog").getByRole("button", { name: "Suspend tenant" }).click();
  await po.getByTestId("tenant-status").getByText(/Suspended — invoice overdue/).waitFor({ timeout: 15_000 });
  await waitFor("the operator's actions in the tenant's audit log", async () => {
    const rows = po.getByTestId("tenant-audit").getByRole("row").filter({ hasText: "dev-operator" });
    return (await rows.count()) >= 3 || `${await rows.count()} rows`;
  }, 30_000);
  await check(po, "admin-tenant");
  await shots(po, "admin-tenant");
  await po.getByRole("button", { name: "Resume tenant" }).click();
  await po.getByRole("dialog").getByRole("button", { name: "Resume tenant" }).click();
  await po.getByTestId("tenant-status").getByText("Active").waitFor({ timeout: 15_000 });
  await nav.getByRole("link", { name: "All clusters" }).click();
  await heading(po, /^Clusters of every tenant$/);
  await po.getByTestId("admin-clusters").getByRole("link", { name: "console-a", exact: true }).first().waitFor({ timeout: 30_000 });
  const filters = po.getByRole("form", { name: "Cluster filters" });
  await filters.getByLabel("Tenant").fill("console-b");
  await filters.getByRole("button", { name: "Filter" }).click();
  await waitFor("only console-b's clusters", async () => (await po.getByTestId("admin-clusters").getByRole("link", { name: "console-a", exact: true }).count()) === 0 || "console-a still listed", 15_000);
  await check(po, "admin-clusters");
  // Every tenant's operations, filtered: tenant A's create, where it stands and who asked.
  await nav.getByRole("link", { name: "Operations" }).click();
  await heading(po, /^Operations of every tenant$/);
  const opFilters = po.getByRole("form", { name: "Operation filters" });
  await opFilters.getByLabel("Tenant").fill("console-a");
  await opFilters.getByLabel("Kind").selectOption("create");
  await opFilters.getByRole("button", { name: "Filter" }).click();
  await po.getByTestId("admin-operations").getByRole("row").filter({ hasText: "create" }).filter({ hasText: "console-a" }).first().waitFor({ timeout: 15_000 });
  await check(po, "admin-operations");

  step("the operator's catalog: a version deprecated with its reason; a rollout that selects nothing is refused in the form");
  await nav.getByRole("link", { name: "Templates" }).click();
  await heading(po, /^Templates$/);
  const eks = po.getByTestId("template-aws-eks-basic");
  await eks.getByRole("row").filter({ hasText: "1.1.0" }).getByText("active").waitFor({ timeout: 15_000 });
  await eks.getByRole("button", { name: "Deprecate aws-eks-basic 1.1.0" }).click();
  await po.getByRole("dialog").getByLabel("Reason (optional)").fill("use 1.2.0: it installs the agent");
  await po.getByRole("dialog").getByRole("button", { name: "Deprecate version" }).click();
  await eks.getByRole("row").filter({ hasText: "1.1.0" }).getByText("deprecated").waitFor({ timeout: 15_000 });
  await eks.getByRole("row").filter({ hasText: "use 1.2.0: it installs the agent" }).filter({ hasText: "dev-operator" }).waitFor();
  await check(po, "admin-templates");
  await nav.getByRole("link", { name: "Rollouts" }).click();
  await heading(po, /^Rollouts$/);
  const start = po.getByRole("form", { name: "Start a rollout" });
  await start.getByRole("button", { name: "Preview" }).click();
  await start.getByText(/required: the template/).waitFor({ timeout: 5_000 });
  await start.getByLabel("Template").fill("aws-eks-basic");
  await start.getByLabel("To version").fill("1.2.0");
  await start.getByLabel("Clusters").fill("no-such-cluster");
  await start.getByRole("button", { name: "Preview" }).click();
  await start.locator(".problem").waitFor({ timeout: 15_000 });
  console.log(`  a rollout of nothing: ${((await start.locator(".problem").textContent()) ?? "").trim()}`);
  await check(po, "admin-rollouts");
  if (consoleErrors.length) fail(`page errors: ${consoleErrors.join("; ")}`);

  step("tenant A's token on the operator's page: the API's refusal, shown");
  const pa = await (await browser.newContext({ bypassCSP: true })).newPage();
  await pa.goto(`${base}/admin/tenants#token=${encodeURIComponent(tokenA)}`);
  await heading(pa, /^Tenants$/);
  await pa.locator(".problem").filter({ hasText: /403|platform:admin|operator/i }).waitFor({ timeout: 15_000 });
  if ((await pa.getByTestId("tenants").count()) > 0) fail("a tenant's token lists the tenants");
}

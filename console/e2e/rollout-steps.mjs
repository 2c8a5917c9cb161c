// The rollout page's steps of e2e/run.mjs (with E2E_ROLLOUT: tenant A's rollout paused by a failed cluster):
// the fleet summary, each cluster's plan with its replaced addresses, why it paused (naming the cluster and
// its failure); "Resume without the failed" completes it with the failed cluster skipped. axe runs on the
// paused and the completed page.

export async function rolloutSteps(page, id, { step, heading, waitFor, check, shots, fail }) {
  step("a paused rollout: the fleet summary, each cluster's plan, why it paused; resumed without the failed cluster, it completes");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Rollouts" }).click();
  await heading(page, /^Rollouts$/);
  await page.getByTestId("rollouts").getByRole("link", { name: id }).click();
  await heading(page, new RegExp(`^Rollout ${id}$`));
  const phase = page.getByTestId("rollout-phase");
  const text = async (l) => ((await l.textContent()) ?? "").replace(/\s+/g, " ").trim();
  await waitFor("the rollout's phase", async () => /^paused — wave \d+$/.test(await text(phase)) || (await text(phase)), 15_000);
  const reason = await text(page.getByTestId("rollout-pause-reason"));
  if (!/^cluster cl-\S+ failed: \S/.test(reason)) fail(`the pause reason does not name the cluster and its failure: ${reason}`);
  const summary = await text(page.getByTestId("rollout-summary"));
  if (!/^\d+ clusters: \d+ in place, \d+ replace \S+, \d+ destroy; [+-]\$[\d.]+\/month/.test(summary)) fail(`fleet summary: ${summary}`);
  const rows = page.getByTestId("rollout-members").locator("tbody tr");
  const n = await rows.count();
  if (n < 3) fail(`${n} member rows`);
  const failedId = /^cluster (\S+) failed/.exec(reason)[1];
  const failedRow = rows.filter({ hasText: failedId });
  if (!/failed/.test(await text(failedRow))) fail(`the failed cluster's row: ${await text(failedRow)}`);
  const replacing = await rows.filter({ hasText: /± \S+/ }).count();
  if (!replacing) fail("no member row shows a replaced address");
  console.log(`  ${summary}\n  paused: ${reason.slice(0, 140)}…\n  ${n} clusters, ${replacing} showing their replaced addresses`);
  await check(page, "rollout-paused");
  await shots(page, "rollout");
  await page.getByRole("button", { name: "Resume without the failed" }).click();
  await waitFor("the rollout to complete", async () => (await text(phase)) === "completed" || (await text(phase)), 60_000, 1000);
  if (!/skipped/.test(await text(failedRow))) fail(`the failed cluster after the resume: ${await text(failedRow)}`);
  if (await rows.filter({ hasText: /pending|upgrading/ }).count()) fail("a cluster is still pending after completion");
  if (await page.getByRole("button", { name: /^Resume/ }).count()) fail("a completed rollout still offers Resume");
  await check(page, "rollout-completed");
}

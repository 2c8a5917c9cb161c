// The rollout routes of e2e/mock-server.mjs, as GET /v1/rollouts[/{id}] and POST /v1/rollouts/{id}/{pause,
// resume,abort} answer (the OpenAPI's Rollout): tenant-a starts with one apply rollout of three waves paused
// in its second wave because one cluster's update failed — what the devstack scenario
// (tests/tests/devstack/devstack_fleet.rs) produces for real. A resume (skip_failed or not) leaves the failed
// cluster skipped or plans it again (it fails again: its variables have not changed) and upgrades the third
// wave one cluster per second, then completes. Every other tenant has no rollout.
const REPLACED = "module.fleet.aws_subnet.this";
export const MOCK_ROLLOUT = "ro-0190c0de00007000a000000000000001";
const FAILED = "cl-0190c0de00007000a0000000000000a3";
const REASON = "Error: error creating subnet: InvalidSubnet.Range: The CIDR '10.61.2.0/24' is invalid. status code: 400, request id: request-id (The cloud API rejected a value; correct the variables named in the error and submit again.)";

const member = (n, wave, status, extra = {}) => ({
  cluster_id: `cl-0190c0de00007000a0000000000000a${n}`, tenant_id: "tenant-a", from_version: "1.0.0", wave, status,
  create: 1, update: 0, replace: [REPLACED], destroy: [], monthly_delta: 3.65, denied: [], ...extra,
});
const rollouts = new Map([[MOCK_ROLLOUT, {
  tenant: "tenant-a",
  r: {
    id: MOCK_ROLLOUT, template: "fixture-fleet", to_version: "2.0.0", mode: "apply", tenant_id: "tenant-a", created_by: "tenant-a",
    phase: "paused", wave: 1, pause_reason: `cluster ${FAILED} failed: ${REASON}`,
    members: [
      member(1, 0, "upgraded"), member(2, 1, "upgraded"),
      member(3, 1, "failed", { reason: REASON, create: 0, replace: [], monthly_delta: undefined }),
      member(4, 1, "upgraded"), member(5, 2, "pending", { create: 0, replace: [], monthly_delta: undefined }),
      member(6, 2, "pending", { create: 0, replace: [], monthly_delta: undefined }),
    ],
  },
}]]);

/** The summary as the API words it (`report.rs`). */
function summary(r) {
  const s = { clusters: r.members.length, in_place: 0, upgraded: 0, held: 0, failed: 0, skipped: 0, waiting: 0, monthly_delta: 0 };
  const replaced = new Map();
  for (const m of r.members) {
    if (m.status === "failed") s.failed++;
    else if (m.status === "skipped") s.skipped++;
    else if (m.status === "pending" || m.status === "planning" || m.status === "upgrading") s.waiting++;
    if (m.status === "upgraded") s.upgraded++;
    if (m.monthly_delta != null) s.monthly_delta += m.monthly_delta;
    for (const a of m.replace) replaced.set(a, (replaced.get(a) ?? 0) + 1);
    if (m.monthly_delta != null && !m.replace.length) s.in_place++;
  }
  s.monthly_delta = Math.round(s.monthly_delta * 100) / 100;
  const rep = replaced.size ? [...replaced].map(([a, n]) => `${n} replace ${a}`).join(", ") : "0 replace";
  let text = `${s.clusters} clusters: ${s.in_place} in place, ${rep}, 0 destroy; +$${s.monthly_delta.toFixed(2)}/month`;
  if (s.failed) text += `; ${s.failed} failed`;
  if (s.waiting) text += `; ${s.waiting} not planned yet`;
  return { text, ...s };
}
const view = (r) => ({ ...r, summary: summary(r), members: r.members.map((m) => ({ ...m })) });

/** Goes on after a resume: the paused wave's failed cluster, then the third wave one cluster a second. */
function resume(r, skipFailed) {
  r.phase = "running";
  delete r.pause_reason;
  for (const m of r.members.filter((m) => m.wave === r.wave && m.status === "failed")) {
    if (skipFailed) {
      m.status = "skipped";
      m.reason = `skipped on resume: ${m.reason}`;
    } else {
      // Planned again, and failing again: nothing about the cluster changed.
      m.status = "planning";
      setTimeout(() => { m.status = "failed"; r.phase = "paused"; r.pause_reason = `cluster ${m.cluster_id} failed: ${REASON}`; }, 1000);
      return;
    }
  }
  r.wave = 2;
  const step = () => {
    const next = r.members.find((m) => m.status === "pending" || m.status === "upgrading");
    if (!next) { r.phase = "completed"; delete r.wave; return; }
    if (next.status === "pending") Object.assign(next, { status: "upgrading", create: 1, replace: [REPLACED], monthly_delta: 3.65 });
    else next.status = "upgraded";
    setTimeout(step, 500);
  };
  setTimeout(step, 500);
}

/** Answers a /v1/rollouts request of `tenant` (true), or leaves it to the caller (false). */
export async function rolloutRoutes(req, res, url, tenant, { send, problem, body }) {
  const p = url.pathname, m = req.method;
  if (p === "/v1/rollouts" && m === "GET") {
    const mine = [...rollouts.values()].filter((x) => x.tenant === tenant).map((x) => ({ ...view(x.r), members: [] }));
    send(res, 200, { rollouts: mine });
    return true;
  }
  const g = /^\/v1\/rollouts\/([^/]+)(\/(pause|resume|abort))?$/.exec(p);
  if (!g) return false;
  const rec = rollouts.get(decodeURIComponent(g[1]));
  if (!rec || rec.tenant !== tenant) { problem(res, 404, "Not Found", `no rollout '${g[1]}'`); return true; }
  const r = rec.r;
  if (!g[3] && m === "GET") { send(res, 200, view(r)); return true; }
  if (!g[3] || m !== "POST") return false;
  const b = (await body(req)) ?? {};
  if (r.phase === "completed" || r.phase === "aborted") {
    problem(res, 409, "Conflict", "the rollout has ended (completed or aborted): start a new one");
    return true;
  }
  if (g[3] === "resume" && r.phase === "paused") resume(r, b.skip_failed === true);
  if (g[3] === "pause" && r.phase === "running") { r.phase = "paused"; r.pause_reason = `paused by ${tenant}`; }
  if (g[3] === "abort") { r.phase = "aborted"; r.pause_reason = `aborted by ${tenant}`; delete r.wave; }
  send(res, 200, view(r));
  return true;
}

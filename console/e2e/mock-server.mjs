// A small stand-in for devstack, to check the console's pages without the Rust stack: serves dist/ with
// an SPA fallback, /console.json, the /v1 routes the console uses (in memory, per tenant = the JWT's
// `tenant` or `sub` claim, unverified), and a WebSocket log stream that replays as `log` frames and sends
// live lines as `log_batch` frames (with duplicates and a skipped range to exercise the repair). Plan
// approvals: a cluster created (or PATCHed) with `approval: "required"` has its create/update wait after
// the plan step in `awaiting_approval` until approved (then it applies) or rejected/cancelled (it ends
// cancelled); approve/reject need the `operations:approve` (or `admin`) scope when the token has a `scope`
// claim, the requester (`sub`) cannot decide on its own operation (403 `self-approval`), a decision naming
// another plan than the pending one is a 409 `plan-changed`, and lowering a cluster's `required` needs `admin`.
// Rollouts: tenant-a's paused rollout (e2e/mock-rollouts.mjs).
// Usage: node e2e/mock-server.mjs [httpPort=18090] [wsPort=18091]
import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { WebSocketServer } from "ws";
import { rolloutRoutes } from "./mock-rollouts.mjs";

const HTTP = Number(process.argv[2] ?? 18090);
const WSP = Number(process.argv[3] ?? 18091);
const DIST = new URL("../dist/", import.meta.url).pathname;
const now = () => new Date().toISOString();

const V = (type, description, extra = {}) => ({ type, description, required: false, sensitive: false, ...extra });
const TEMPLATE = {
  name: "aws-eks-basic", version: "1.0.0", versions: ["1.0.0"], verified_offline: true, providers: ["aws"],
  description: "Amazon EKS cluster with one managed node group (mock)",
  defaults: { aws: { region: "us-east-1", variables: { node_instance_type: "t3.medium" } } },
  variables: {
    node_count: V("integer", "Desired number of worker nodes", { min: 1, max: 100, default: 2 }),
    min_nodes: V("integer", "Minimum nodes", { min: 1, max: 100, default: 1 }),
    max_nodes: V("integer", "Maximum nodes", { min: 1, max: 100, default: 5 }),
    kubernetes_version: V("string", "Kubernetes version", { enum: ["1.29", "1.30", "1.31"], default: "1.30" }),
    node_instance_type: V("string", "EC2 instance type", { catalog: "instance_type", default: "t3.medium" }),
    nat_gateway: V("bool", "One NAT gateway", { default: false }),
    admin_cidrs: V("list(string)", "CIDRs allowed to reach the API", { pattern: "\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}/\\d{1,2}", default: [] }),
    tags: V("map(string)", "Tags added to every resource", { max_length: 256, default: {} }),
    grafana_admin_password: V("string", "Grafana admin password", { sensitive: true, pattern: ".{12,}" }),
  },
  rules: [{ left: "max_nodes", op: ">=", right: "min_nodes", message: "max_nodes must be at least min_nodes" }],
};

const clusters = new Map(); // id → { tenant, c }
const ops = new Map(); // id → { tenant, op, lines: [], subs: Set<ws> }
const webhooks = new Map();
const tickets = new Map();

function claimsOf(req) {
  const m = /^Bearer (.+)$/i.exec(req.headers.authorization ?? "");
  if (!m) return null;
  try { return JSON.parse(Buffer.from(m[1].split(".")[1], "base64url").toString()); } catch { return null; }
}
const tenantOf = (req) => { const p = claimsOf(req); return p ? p.tenant ?? p.sub ?? null : null; };
// No `scope` claim: everything (the mock's old tokens).
const hasScope = (req, s) => { const p = claimsOf(req); return !p?.scope || p.scope.split(/[ ,]+/).some((x) => x === s || x === "admin"); };

function send(res, status, body, type = "application/json") {
  res.writeHead(status, { "content-type": type });
  res.end(typeof body === "string" || Buffer.isBuffer(body) ? body : JSON.stringify(body));
}
const problemAs = (res, status, slug, title, detail, errors) =>
  send(res, status, { type: `urn:strato:problem:${slug}`, title, status, detail, errors, request_id: randomUUID() }, "application/problem+json");
const problem = (res, status, title, detail, errors) => problemAs(res, status, title.toLowerCase().replace(/[^a-z]+/g, "-"), title, detail, errors);

function validate(b, needName) {
  const errs = [];
  if (needName || b.name != null) if (!/^[a-z][a-z0-9-]{1,38}[a-z0-9]$/.test(b.name ?? "")) errs.push({ field: "name", problem: "not a valid cluster name", allowed: "3-40 of a-z, 0-9, '-'" });
  if (b.template?.name !== TEMPLATE.name) errs.push({ field: "template.name", problem: "no such template", allowed: TEMPLATE.name });
  if (b.provider !== "aws") errs.push({ field: "provider", problem: "not offered by the template", allowed: "aws" });
  if (!/^[a-z]{2}-[a-z]+-\d$/.test(b.region ?? "")) errs.push({ field: "region", problem: `'${b.region}' is not an aws region`, allowed: "e.g. us-east-1" });
  const vars = b.variables ?? {};
  for (const [k, v] of Object.entries(vars)) {
    const s = TEMPLATE.variables[k];
    if (!s) { errs.push({ field: `variables.${k}`, problem: "unknown variable", allowed: Object.keys(TEMPLATE.variables).join(", ") }); continue; }
    if (s.type === "integer" && (!Number.isInteger(v) || v < s.min || v > s.max)) errs.push({ field: `variables.${k}`, problem: `${JSON.stringify(v)} is out of range`, allowed: `an integer ${s.min}..=${s.max}` });
    if (s.enum && !s.enum.includes(v)) errs.push({ field: `variables.${k}`, problem: "not one of the values", allowed: s.enum.join(", ") });
    if (s.type === "map(string)") for (const [mk, mv] of Object.entries(v ?? {})) if (String(mv).length > s.max_length) errs.push({ field: `variables.${k}.${mk}`, problem: "too long", allowed: `at most ${s.max_length} characters` });
  }
  const num = (n) => vars[n] ?? TEMPLATE.variables[n].default;
  if (num("max_nodes") < num("min_nodes")) errs.push({ field: "variables.max_nodes", problem: "max_nodes must be at least min_nodes", allowed: `>= ${num("min_nodes")}` });
  return errs;
}

function newOp(tenant, kind, cluster, spec, by = tenant) {
  const approval_required = (kind === "create" || kind === "update") && cluster?.approval === "required";
  const op = { id: `op-${randomUUID()}`, kind, status: "queued", attempt: 0, steps: [], cancel_requested: false, notes: [], created_at: now(), updated_at: now(), cluster_id: cluster?.id ?? null, spec, requested_by: by, approval_required, approval: null };
  const rec = { tenant, op, lines: [], subs: new Set() };
  ops.set(op.id, rec);
  return rec;
}

function broadcast(rec, frame) {
  for (const ws of rec.subs) ws.send(JSON.stringify(frame));
}

function emit(rec, step, texts, stream = "stdout") {
  const t0 = Date.now();
  const first = rec.lines.length + 1;
  const lines = texts.map((text, i) => ({ seq: first + i, ts: new Date(t0 + i).toISOString(), stream, step, text }));
  rec.lines.push(...lines);
  // Every 7th batch is "skipped" on the live path (the archive has it) to exercise gap repair; every 5th is sent twice.
  const n = Math.floor(first / texts.length);
  if (n % 7 === 3) return;
  const frame = { type: "log_batch", operation_id: rec.op.id, first_seq: first, t0: new Date(t0).toISOString(), runs: [{ stream, step, dt_us: texts.map((_, i) => i * 1000), text: texts }] };
  broadcast(rec, frame);
  if (n % 5 === 1) broadcast(rec, frame);
}

function status(rec, cluster) {
  broadcast(rec, { type: "status", operation_id: rec.op.id, cluster_id: cluster?.id, cluster_state: cluster?.state ?? "ACTIVE", operation_status: rec.op.status, step: rec.op.current_step ?? null });
}

// The plan an approval shows: 3 to add (one of them a replace), 1 to change, 1 to destroy.
const CHANGES = [
  { address: "aws_eks_cluster.this", actions: ["create"] },
  { address: "aws_eks_node_group.default", actions: ["create"] },
  { address: "aws_security_group.nodes", actions: ["delete", "create"] },
  { address: "aws_iam_role.node", actions: ["update"] },
];

function run(rec, cluster, steps, final) {
  const op = rec.op;
  let i = 0;
  const tick = () => {
    if (op.cancel_requested) { op.status = "cancelled"; finish(); return; }
    if (op.approval_required && !op.approval && steps[i - 1]?.name === "plan") {
      // Planned: wait for a decision (decide() resumes or ends it).
      op.status = "awaiting_approval"; op.current_step = null; op.updated_at = now();
      op.approval = { stage: "cluster", round: 1, summary: { add: 3, change: 1, destroy: 1 }, changes: CHANGES,
        plan_sha256: randomUUID().replace(/-/g, "").repeat(2), requested_at: now(), expires_at: new Date(Date.now() + 24 * 3600e3).toISOString(), decision: null };
      emit(rec, "strato", ["plan saved; waiting for an approver"], "strato");
      status(rec, cluster);
      rec.resume = tick;
      rec.end = () => { op.status = "cancelled"; finish(); };
      return;
    }
    if (i >= steps.length) { op.status = "succeeded"; final(); finish(); return; }
    const step = steps[i++];
    op.status = "running"; op.attempt = 1; op.current_step = step.name; op.updated_at = now();
    op.steps.push({ name: step.name, started_at: now(), finished_at: null, ok: null });
    if (cluster && step.state) cluster.state = step.state;
    status(rec, cluster);
    let k = 0;
    const iv = setInterval(() => {
      const size = step.size ?? 20;
      const texts = Array.from({ length: size }, (_, j) => `${step.name}: \x1b[32m+\x1b[0m resource ${k * size + j} \x1b[1mcreating\x1b[0m…`);
      emit(rec, step.name, texts);
      if (++k >= step.batches) {
        // Terraform's own summary line, which the operation page reads its plan summary from.
        if (step.name === "plan") emit(rec, "plan", ["\x1b[1mPlan:\x1b[0m 12 to add, 0 to change, 0 to destroy."]);
        clearInterval(iv);
        const s = op.steps[op.steps.length - 1];
        s.finished_at = now(); s.ok = true;
        setTimeout(tick, 100);
      }
    }, 60);
  };
  const finish = () => {
    op.current_step = null; op.updated_at = now(); op.ended_at = now();
    if (op.status === "succeeded" && (op.kind === "create" || op.kind === "update")) op.estimate = ESTIMATE;
    emit(rec, "strato", [`operation ${op.status}`], "strato");
    if (op.status === "cancelled" && cluster && op.kind === "create") cluster.state = "FAILED";
    if (op.status === "cancelled" && cluster && op.kind === "update") cluster.state = "ACTIVE";
    status(rec, cluster);
    broadcast(rec, { type: "end", operation_id: op.id, final_status: op.status, last_seq: rec.lines.length });
  };
  setTimeout(tick, 400);
}

// approve / reject / cancel of an operation awaiting approval: records the decision, then applies or ends it.
function decide(rec, verdict, by, comment) {
  const op = rec.op;
  op.approval.decision = { verdict, by, at: now(), comment: comment ?? null };
  op.updated_at = now();
  if (verdict === "approved") { op.status = "dispatched"; const go = rec.resume; rec.resume = rec.end = null; setTimeout(go, 300); }
  else { const end = rec.end; rec.resume = rec.end = null; end(); }
}

// The newest operation of a cluster, as the API's `last_operation`.
function withLast(c) {
  const last = [...ops.values()].filter((r) => r.op.cluster_id === c.id && r.op.kind !== "estimate").pop()?.op;
  return { ...c, last_operation: last ? { id: last.id, kind: last.kind, status: last.status, created_at: last.created_at, updated_at: last.updated_at } : null };
}

const ESTIMATE = { currency: "USD", total_monthly: 146.72, price_table_date: "2026-11-01", price_table_source: "mock price table", not_estimated: ["aws_iam_role.node"],
  resources: [{ address: "aws_eks_cluster.this", monthly: 73 }, { address: "aws_eks_node_group.default", monthly: 60.74 }, { address: "aws_ebs_volume.root", monthly: 12.98 },
    { address: "aws_vpc.this", monthly: 0 }, { address: "aws_subnet.private[0]", monthly: 0 }, { address: "aws_subnet.private[1]", monthly: 0 }, { address: "aws_route_table.private", monthly: 0 }] };
// What the API recorded that the mock refused (the audit page shows refusals with their reason).
const refusals = [];

async function body(req) {
  let s = "";
  for await (const c of req) s += c;
  try { return JSON.parse(s || "{}"); } catch { return null; }
}

async function api(req, res, url) {
  const tenant = tenantOf(req);
  if (!tenant) return problem(res, 401, "Unauthorized", "no valid bearer token");
  const principal = claimsOf(req).sub ?? tenant;
  const p = url.pathname, m = req.method;
  let g;
  const mine = (id) => { const r = clusters.get(id); return r && r.tenant === tenant ? r.c : null; };
  if (p === "/v1/clusters" && m === "GET") {
    const list = [...clusters.values()].filter((r) => r.tenant === tenant).map((r) => r.c).filter((c) => !url.searchParams.get("state") || c.state === url.searchParams.get("state")).map(withLast);
    return send(res, 200, { clusters: list.reverse(), next: null });
  }
  if ((p === "/v1/clusters" || p === "/v1/estimates") && m === "POST") {
    const b = await body(req);
    if (!b) return problem(res, 400, "Bad Request", "not JSON");
    const errs = validate(b, p === "/v1/clusters");
    if (b.approval != null && !["auto", "required"].includes(b.approval)) errs.push({ field: "approval", problem: `'${b.approval}' is not an approval mode`, allowed: "auto, required" });
    if (errs.length) {
      refusals.push({ tenant, time: now(), actor: principal, action: p === "/v1/estimates" ? "estimate.create" : "cluster.create", cluster_id: null, operation_id: null, request_id: randomUUID(),
        outcome: "refused", status: 422, detail: errs.map((e) => `${e.field}: ${e.problem}`).join("; ") });
      return problem(res, 422, "Invalid request", `${errs.length} problem(s) with the request`, errs);
    }
    const spec = { name: b.name ?? "estimate", template: b.template, provider: b.provider, region: b.region, variables: b.variables ?? {} };
    if (p === "/v1/estimates") {
      const rec = newOp(tenant, "estimate", null, spec);
      setTimeout(() => { rec.op.status = "succeeded"; rec.op.estimate = ESTIMATE; rec.op.updated_at = now(); }, 800);
      return send(res, 202, { operation: rec.op });
    }
    const c = { id: `cl-${randomUUID()}`, name: b.name, state: "PENDING", template: b.template, provider: b.provider, region: b.region, variables: { ...b.variables }, outputs: {},
      drift: { drifted: false, changed_resources: [], policy: "notify", interval_hours: 6, checked_at: null }, version: 1, created_at: now(), updated_at: now(),
      approval: b.approval ?? null, expires_at: b.ttl_hours ? new Date(Date.now() + b.ttl_hours * 3600e3).toISOString() : null };
    clusters.set(c.id, { tenant, c });
    const rec = newOp(tenant, "create", c, spec, principal);
    run(rec, c, [{ name: "init", batches: 5, state: "PROVISIONING" }, { name: "plan", batches: 20 }, b.name.startsWith("big") ? { name: "apply", batches: 100, size: 500 } : { name: "apply", batches: 60 }, { name: "configure", batches: 5, state: "CONFIGURING" }],
      () => { c.state = "ACTIVE"; c.outputs = { cluster_endpoint: "https://mock.eks.example", vpc_id: "vpc-123", kubeconfig: "(sensitive)" }; c.updated_at = now(); });
    return send(res, 202, { cluster: withLast(c), operation: rec.op });
  }
  if ((g = /^\/v1\/clusters\/([^/]+)$/.exec(p))) {
    const c = mine(g[1]);
    if (!c) return problem(res, 404, "Not Found", "no such cluster");
    if (m === "GET") return send(res, 200, withLast(c));
    if (m === "PATCH") {
      const b = await body(req);
      if (!b || !Object.keys(b).length) return problem(res, 400, "Bad Request", "a JSON object with at least one member");
      const im = req.headers["if-match"];
      if (im && im !== "*" && im !== `"${c.version}"`) return problemAs(res, 412, "precondition-failed", "Precondition failed", `the cluster is at version ${c.version}`);
      if ("approval" in b && b.approval !== null && !["auto", "required"].includes(b.approval)) return problem(res, 422, "Invalid request", "bad approval", [{ field: "approval", problem: "not an approval mode", allowed: "auto, required, null" }]);
      // Taking back the cluster's own `required` is an admin's (the mock has no template or tenant mode).
      if ("approval" in b && c.approval === "required" && b.approval !== "required" && !hasScope(req, "admin"))
        return problemAs(res, 403, "forbidden", "Forbidden", "lowering the approval requirement needs the 'admin' scope", [{ field: "approval", problem: `'${b.approval ?? "default"}' lowers this cluster's approval requirement`, allowed: "a token with the 'admin' scope" }]);
      if ("approval" in b) c.approval = b.approval;
      if (b.ttl_hours) c.expires_at = new Date(Date.now() + b.ttl_hours * 3600e3).toISOString();
      if ("expires_at" in b) c.expires_at = b.expires_at;
      if (b.drift) c.drift = { ...c.drift, ...b.drift };
      c.version += 1; c.updated_at = now();
      if (!b.variables && !b.template_version) return send(res, 200, withLast(c));
      Object.assign(c.variables, b.variables ?? {});
      c.state = "UPDATING";
      const rec = newOp(tenant, "update", c, { name: c.name, template: c.template, provider: c.provider, region: c.region, variables: c.variables }, principal);
      run(rec, c, [{ name: "plan", batches: 5 }, { name: "apply", batches: 10 }], () => { c.state = "ACTIVE"; c.updated_at = now(); });
      return send(res, 202, { cluster: withLast(c), operation: rec.op });
    }
    if (m === "DELETE") {
      c.state = "DELETING";
      const rec = newOp(tenant, "delete", c, null, principal);
      run(rec, c, [{ name: "destroy", batches: 10 }], () => { c.state = "DELETED"; c.updated_at = now(); });
      return send(res, 202, { cluster: withLast(c), operation: rec.op });
    }
  }
  if ((g = /^\/v1\/clusters\/([^/]+)\/operations$/.exec(p))) {
    if (!mine(g[1])) return problem(res, 404, "Not Found", "no such cluster");
    return send(res, 200, { operations: [...ops.values()].filter((r) => r.op.cluster_id === g[1]).map((r) => r.op) });
  }
  if ((g = /^\/v1\/clusters\/([^/]+)\/kubeconfig$/.exec(p))) {
    const c = mine(g[1]);
    if (!c) return problem(res, 404, "Not Found", "no such cluster");
    if (!c.outputs?.cluster_endpoint) return problemAs(res, 409, "conflict", "Conflict", `cluster ${c.name} has no endpoint yet (it is ${c.state}); ask again once it is ACTIVE`);
    const ctx = `strato-${c.name}`;
    const token_command = `aws --region ${c.region} eks get-token --cluster-name ${c.name}-${c.id.slice(-8)} --output json`;
    return send(res, 200, { context: ctx, kind: "eks", cluster_name: `${c.name}-${c.id.slice(-8)}`, region: c.region, endpoint: c.outputs.cluster_endpoint,
      kubeconfig: `apiVersion: v1\nkind: Config\ncurrent-context: ${ctx}\nclusters:\n- name: ${ctx}\n  cluster:\n    server: ${c.outputs.cluster_endpoint}\nusers:\n- name: ${ctx}\n  user:\n    exec:\n      command: aws\n      args: [eks, get-token]\n`,
      token_command, note: null });
  }
  if ((g = /^\/v1\/clusters\/([^/]+)\/state-versions$/.exec(p))) {
    if (!mine(g[1])) return problem(res, 404, "Not Found", "no such cluster");
    return send(res, 200, { items: [{ stage: "cluster", version_id: "v2", size: 2048, is_latest: true, last_modified: now() }, { stage: "cluster", version_id: "v1", size: 1024, is_latest: false, last_modified: now() }], restores: [] });
  }
  if ((g = /^\/v1\/operations\/([^/]+)(\/cancel|\/approve|\/reject)?$/.exec(p))) {
    const rec = ops.get(g[1]);
    if (!rec || rec.tenant !== tenant) return problem(res, 404, "Not Found", "no such operation");
    const op = rec.op;
    if (g[2] === "/cancel") {
      if (op.status === "awaiting_approval" && !op.approval.decision) { decide(rec, "cancelled", principal, null); return send(res, 202, op); }
      op.cancel_requested = true;
      return send(res, 202, op);
    }
    if (g[2]) {
      if (!hasScope(req, "operations:approve")) return problemAs(res, 403, "forbidden", "Forbidden", "this route needs the scope operations:approve", [{ field: "scope", problem: "missing", allowed: "operations:approve" }]);
      const b = await body(req);
      if (!b) return problem(res, 400, "Bad Request", "not JSON");
      if ((b.comment ?? "").length > 1000) return problem(res, 422, "Invalid request", "1 problem(s) with the request", [{ field: "comment", problem: "is longer than 1000 characters", allowed: "at most 1000 characters" }]);
      if (op.status !== "awaiting_approval") return problemAs(res, 409, "conflict", "Conflict", `operation ${op.id} is not awaiting approval (it is ${op.status})`);
      if (op.approval.decision) return problemAs(res, 409, "conflict", "Conflict", `operation ${op.id} was already ${op.approval.decision.verdict}`);
      // The plan the approver saw must be the one pending (each part the body names).
      const a = op.approval;
      if ((b.plan_sha256 != null && b.plan_sha256 !== a.plan_sha256) || (b.round != null && b.round !== a.round) || (b.stage != null && b.stage !== a.stage))
        return problemAs(res, 409, "plan-changed", "Another plan is pending", `the operation's pending plan is not the one this decision names: now pending is round ${a.round} of stage ${a.stage} with plan_sha256 ${a.plan_sha256}; nothing was decided`,
          [{ field: "plan_sha256", problem: "names a plan that is not the one pending", allowed: `the pending plan: plan_sha256 ${a.plan_sha256}, round ${a.round}, stage ${a.stage}` }]);
      if (op.requested_by === principal) return problemAs(res, 403, "self-approval", "Approver is the requester", `${principal} requested operation ${op.id}: separation of duties is on (STRATO_APPROVAL_SEPARATION); ask another principal with the operations:approve scope`);
      decide(rec, g[2] === "/approve" ? "approved" : "rejected", principal, b.comment);
      return send(res, 202, op);
    }
    return send(res, 200, op);
  }
  if (p === "/v1/audit" && m === "GET") {
    // What the real API records for these calls, derived from the operations (newest first, one page).
    const entries = [...ops.values()].filter((r) => r.tenant === tenant && r.op.kind !== "estimate").reverse().map((r) => ({
      time: r.op.created_at, actor: "mock-user", action: `cluster.${r.op.kind}`, cluster_id: r.op.cluster_id,
      operation_id: r.op.id, request_id: null, outcome: "accepted", status: 202, detail: null,
    }));
    const refused = refusals.filter((r) => r.tenant === tenant).map(({ tenant: _t, ...e }) => e).reverse();
    return send(res, 200, { entries: [...entries, ...refused].sort((a, b) => b.time.localeCompare(a.time)), next: null });
  }
  if (p === "/v1/ws-tickets" && m === "POST") {
    const token = randomUUID();
    tickets.set(token, tenant);
    return send(res, 201, { token, expires_at: new Date(Date.now() + 60000).toISOString(), use: "connect with ?token=" });
  }
  if (p === "/v1/templates") return send(res, 200, { templates: [{ name: TEMPLATE.name, version: TEMPLATE.version, versions: TEMPLATE.versions, description: TEMPLATE.description, providers: TEMPLATE.providers, verified_offline: true }] });
  if (p === `/v1/templates/${TEMPLATE.name}`) return send(res, 200, TEMPLATE);
  if (p === "/v1/webhook") {
    if (m === "GET") return webhooks.has(tenant) ? send(res, 200, webhooks.get(tenant)) : problem(res, 404, "Not Found", "no webhook");
    if (m === "DELETE") { webhooks.delete(tenant); return send(res, 200, { deleted: true }); }
    if (m === "PUT") {
      const b = await body(req);
      const errs = [];
      if (!/^https:\/\//.test(b?.url ?? "")) errs.push({ field: "url", problem: "not https", allowed: "https://…" });
      if ((b?.secret ?? "").length < 16) errs.push({ field: "secret", problem: "too short", allowed: "at least 16 characters" });
      if (errs.length) return problem(res, 422, "Invalid request", "bad webhook", errs);
      webhooks.set(tenant, { url: new URL(b.url).origin, secret: "(sensitive)" });
      return send(res, 200, webhooks.get(tenant));
    }
  }
  if (await rolloutRoutes(req, res, url, tenant, { send, problem, body })) return;
  return problem(res, 404, "Not Found", `no route ${m} ${p}`);
}

const MIME = { ".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".map": "application/json", ".svg": "image/svg+xml" };
http.createServer(async (req, res) => {
  const url = new URL(req.url, `http://${req.headers.host}`);
  if (url.pathname.startsWith("/v1/")) return api(req, res, url);
  if (url.pathname === "/console.json") return send(res, 200, { ws_endpoint: `ws://127.0.0.1:${WSP}/local`, auth: { kind: "token" } });
  const file = path.join(DIST, path.normalize(url.pathname).replace(/^(\.\.[/\\])+/, ""));
  const target = file.startsWith(DIST) && fs.existsSync(file) && fs.statSync(file).isFile() ? file : path.join(DIST, "index.html");
  send(res, 200, fs.readFileSync(target), MIME[path.extname(target)] ?? "application/octet-stream");
}).listen(HTTP, "127.0.0.1", () => console.log(`mock console on http://127.0.0.1:${HTTP}/ (ws ${WSP})`));

const wss = new WebSocketServer({ port: WSP, host: "127.0.0.1" });
wss.on("connection", (ws, req) => {
  const token = new URL(req.url, "http://x").searchParams.get("token");
  const tenant = tickets.get(token);
  tickets.delete(token);
  if (!tenant) { ws.close(1008, "bad ticket"); return; }
  ws.on("message", (data) => {
    let msg;
    try { msg = JSON.parse(String(data)); } catch { return; }
    if (msg.action !== "subscribe") return ws.send(JSON.stringify({ type: "error", message: "unknown action", fix: "send subscribe" }));
    const rec = ops.get(msg.operation_id);
    if (!rec || rec.tenant !== tenant) return ws.send(JSON.stringify({ type: "error", message: "no such operation", fix: "check the id" }));
    const from = Math.max(1, msg.from_seq ?? 1);
    rec.subs.add(ws);
    ws.on("close", () => rec.subs.delete(ws));
    const have = rec.lines.slice(from - 1);
    for (let i = 0; i < have.length; i += 200) ws.send(JSON.stringify({ type: "log", operation_id: rec.op.id, first_seq: have[i].seq, lines: have.slice(i, i + 200) }));
    ws.send(JSON.stringify({ type: "subscribed", operation_id: rec.op.id, from_seq: from, replayed_to: rec.lines.length }));
    if (["succeeded", "failed", "cancelled"].includes(rec.op.status)) ws.send(JSON.stringify({ type: "end", operation_id: rec.op.id, final_status: rec.op.status, last_seq: rec.lines.length }));
  });
});

// The landing page after sign-in: clusters by state, operations in flight, failures of the last day and a
// month-to-date cost estimate. The API has no tenant-wide summary, so the figures are derived here from
// GET /v1/clusters (one page of 100, deleted ones included for the month's cost) and each listed cluster's
// GET /v1/clusters/{id}/operations (its 100 newest); the cost's tooltip and note say how it is computed.

import { api, asProblem, type Cluster, type Operation } from "../api/client";
import { DAY_MS, HOURS_PER_MONTH, countByState, inFlight, monthStart, monthToDate, recentFailures } from "../dashboard/model";
import { Link, PageTitle, ProblemBox, StateBadge, usePoll, when, ListHead } from "../ui";
import { AwaitingApproval } from "./Approval";
import { money } from "./Estimate";

const PAGE = 100;
const PARALLEL = 6;

interface Data {
  clusters: Cluster[];
  more: boolean;
  ops: Map<string, Operation[]>;
  /** Clusters whose operations could not be read (left out of failures and cost). */
  unread: string[];
  at: number;
}

async function load(signal: AbortSignal): Promise<Data> {
  const { data, error, response } = await api.GET("/v1/clusters", { params: { query: { limit: PAGE, include_deleted: true } }, signal });
  if (error || !data) throw asProblem(error, response);
  const now = Date.now();
  const from = monthStart(now);
  // Operations matter for clusters that can have cost this month or a failure in the last day.
  const wanted = data.clusters.filter((c) => c.state !== "DELETED" || Date.parse(c.updated_at) >= Math.min(from, now - DAY_MS));
  const ops = new Map<string, Operation[]>();
  const unread: string[] = [];
  let i = 0;
  const worker = async () => {
    while (i < wanted.length) {
      const c = wanted[i++];
      const r = await api.GET("/v1/clusters/{id}/operations", { params: { path: { id: c.id }, query: { limit: 100 } }, signal });
      if (r.data) ops.set(c.id, r.data.operations);
      else unread.push(c.name);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, wanted.length) }, worker));
  return { clusters: data.clusters, more: !!data.next, ops, unread, at: now };
}

const COST_HOW =
  `Estimated, not billed: each cluster's monthly estimate from its last create or update plan, prorated at ` +
  `${HOURS_PER_MONTH} hours a month over the hours it has run since the 1st (UTC), until it was deleted. ` +
  `Computed in the browser from the clusters' operations.`;

export function DashboardPage() {
  const { data, error } = usePoll(load, 30_000, []);
  return (
    <section>
      <PageTitle>Dashboard</PageTitle>
      <div class="toolbar">
        <Link href="/clusters/new" class="button">New cluster</Link>
        <Link href="/clusters">All clusters</Link>
        <span class="help" aria-live="polite">{data ? `As of ${when(new Date(data.at).toISOString())}, refreshed every 30 s` : "Loading…"}</span>
      </div>
      <ProblemBox problem={error} label="Could not read your clusters" />
      {data ? <Cards d={data} /> : null}
    </section>
  );
}

function Cards({ d }: { d: Data }) {
  const live = d.clusters.filter((c) => c.state !== "DELETED");
  const states = countByState(d.clusters);
  const flying = inFlight(d.clusters);
  const failures = recentFailures(d.ops, d.clusters, d.at);
  const cost = monthToDate(d.clusters, d.ops, d.at);
  const currencies = Object.entries(cost.totals);
  return (
    <>
      <div class="cards">
        <section class="card" aria-labelledby="dash-states">
          <h2 id="dash-states">Clusters</h2>
          <p class="figure" data-testid="dash-cluster-count">{live.length}</p>
          {states.length ? (
            <ul class="plain" data-testid="dash-states">
              {states.map((s) => (
                <li key={s.state}>
                  <Link href={`/clusters?state=${s.state}`}><StateBadge state={s.state} /></Link> {s.count}
                </li>
              ))}
            </ul>
          ) : <p>No clusters yet. <Link href="/clusters/new">Create one</Link>.</p>}
          {d.more ? <p class="help">Counted over your {PAGE} most recent clusters.</p> : null}
        </section>
        <section class="card" aria-labelledby="dash-flight">
          <h2 id="dash-flight">Operations in flight</h2>
          <p class="figure" data-testid="dash-in-flight">{flying.length}</p>
          <p class="help">Queued, running or waiting for approval.</p>
        </section>
        <section class="card" aria-labelledby="dash-failed">
          <h2 id="dash-failed">Failures, last 24 h</h2>
          <p class={`figure${failures.length ? " bad" : ""}`} data-testid="dash-failures">{failures.length}</p>
          <p class="help">Operations that ended failed.</p>
        </section>
        <section class="card" aria-labelledby="dash-cost">
          <h2 id="dash-cost">Cost this month</h2>
          <p class="figure" data-testid="dash-cost" title={COST_HOW}>
            {currencies.length ? currencies.map(([cur, n]) => (n > 0 && n < 0.01 ? `< ${money(0.01, cur)}` : money(n, cur))).join(" + ") : "—"}
          </p>
          {Object.keys(cost.rate).length ? (
            <p data-testid="dash-rate">
              Running now: {Object.entries(cost.rate).map(([cur, n]) => money(n, cur)).join(" + ")} a month
            </p>
          ) : null}
          <p class="help">
            Estimated from the plan estimates of {cost.counted} cluster{cost.counted === 1 ? "" : "s"}, prorated since the 1st (UTC); not a bill.
            {cost.unestimated.length ? ` No estimate for ${cost.unestimated.join(", ")}.` : ""}
          </p>
          <details class="help">
            <summary>How this is computed</summary>
            {COST_HOW}
          </details>
        </section>
      </div>
      {d.unread.length ? <p class="help">Could not read the operations of {d.unread.join(", ")}; they are left out of failures and cost.</p> : null}

      <h2>In flight</h2>
      {flying.length ? (
        <table class="list">
          <ListHead caption="Operations in flight" columns={["Cluster", "Operation", "Status", "Since"]} />
          <tbody>
            {flying.map((c) => (
              <tr key={c.id}>
                <td><Link href={`/clusters/${encodeURIComponent(c.id)}`}>{c.name}</Link></td>
                <td><Link href={`/operations/${encodeURIComponent(c.last_operation!.id)}`}>{c.last_operation!.kind}</Link></td>
                <td><StateBadge state={c.last_operation!.status} /> <AwaitingApproval last={c.last_operation} /></td>
                <td>{when(c.last_operation!.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : <p class="help">Nothing is running.</p>}

      <h2>Failed in the last 24 hours</h2>
      {failures.length ? (
        <table class="list">
          <ListHead caption="Operations that failed in the last 24 hours, newest first" columns={["Cluster", "Operation", "What went wrong", "Ended"]} />
          <tbody>
            {failures.map(({ cluster, op }) => (
              <tr key={op.id}>
                <td><Link href={`/clusters/${encodeURIComponent(cluster.id)}`}>{cluster.name}</Link></td>
                <td><Link href={`/operations/${encodeURIComponent(op.id)}`}>{op.kind}</Link></td>
                <td>{op.error ? <>{op.error.what} <span class="help">(step {op.error.step})</span></> : "—"}</td>
                <td>{when(op.ended_at ?? op.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : <p class="help">No failures.</p>}
    </>
  );
}

// The dashboard's figures, derived in the browser from list endpoints the API has (the API has no
// tenant-wide summary): clusters by state, operations in flight, failures of the last day and a
// month-to-date cost estimate. Pure functions (no api/client import), so they are unit-tested in node.

import type { components } from "../api/schema";

type S = components["schemas"];
export type ClusterLike = Pick<S["Cluster"], "id" | "name" | "state" | "created_at" | "last_operation">;
export type OperationLike = Pick<S["Operation"], "id" | "kind" | "status" | "created_at" | "updated_at" | "ended_at" | "error"> & {
  estimate?: Pick<S["CostEstimate"], "total_monthly" | "currency"> | null;
};

/** The lifecycle order the dashboard lists states in. */
export const STATE_ORDER = ["PENDING", "PROVISIONING", "CONFIGURING", "ACTIVE", "UPDATING", "DELETING", "FAILED", "DELETED"] as const;
const ENDED = ["succeeded", "failed", "cancelled"];

/** Count per state, in lifecycle order, states with no cluster left out. */
export function countByState(clusters: readonly ClusterLike[]): { state: string; count: number }[] {
  const n = new Map<string, number>();
  for (const c of clusters) n.set(c.state, (n.get(c.state) ?? 0) + 1);
  const known = STATE_ORDER.filter((s) => n.has(s)).map((s) => ({ state: s as string, count: n.get(s)! }));
  const other = [...n.keys()].filter((s) => !(STATE_ORDER as readonly string[]).includes(s)).sort();
  return [...known, ...other.map((s) => ({ state: s, count: n.get(s)! }))];
}

/** Clusters whose last operation has not ended (queued, dispatched, running or awaiting approval). */
export function inFlight(clusters: readonly ClusterLike[]): ClusterLike[] {
  return clusters.filter((c) => c.last_operation && !ENDED.includes(c.last_operation.status));
}

/** When an operation ended: `ended_at`, else (older records) its last update. */
export function endedAt(op: Pick<OperationLike, "ended_at" | "updated_at">): number {
  return Date.parse(op.ended_at ?? op.updated_at);
}

export const DAY_MS = 24 * 3600 * 1000;

/** Failed operations that ended in the 24 hours before `now`, newest first, with their cluster. */
export function recentFailures<C extends ClusterLike, O extends OperationLike>(
  opsByCluster: ReadonlyMap<string, readonly O[]>, clusters: readonly C[], now: number,
): { cluster: C; op: O }[] {
  const out: { cluster: C; op: O }[] = [];
  for (const c of clusters) {
    for (const op of opsByCluster.get(c.id) ?? []) {
      if (op.status === "failed" && now - endedAt(op) <= DAY_MS && endedAt(op) <= now) out.push({ cluster: c, op });
    }
  }
  return out.sort((a, b) => endedAt(b.op) - endedAt(a.op));
}

/** Hours in a "month" of the estimates (the usual cloud-pricing convention: 730 h). */
export const HOURS_PER_MONTH = 730;

export function monthStart(now: number): number {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

export interface MonthToDate {
  /** Per currency (estimates could be in more than one). */
  totals: Record<string, number>;
  /** Clusters that ran this month with no estimate to prorate (their cost is not in the totals). */
  unestimated: string[];
  /** Clusters whose cost is in the totals. */
  counted: number;
  /** The monthly estimates of the clusters running now, per currency: what a whole month would cost at this rate. */
  rate: Record<string, number>;
}

/**
 * Each cluster's estimated cost since the 1st of the month (UTC): from the end of each succeeded create or
 * update that carries an estimate, its `total_monthly` accrues at 1/730 per hour until the next such
 * operation, a succeeded delete, or `now`. An update without an estimate keeps the previous rate. It is
 * the plans' estimates prorated, not a bill.
 */
export function monthToDate(clusters: readonly ClusterLike[], opsByCluster: ReadonlyMap<string, readonly OperationLike[]>, now: number): MonthToDate {
  const from = monthStart(now);
  const totals: Record<string, number> = {};
  const unestimated: string[] = [];
  const runRate: Record<string, number> = {};
  let counted = 0;
  for (const c of clusters) {
    const ops = [...(opsByCluster.get(c.id) ?? [])]
      .filter((o) => o.status === "succeeded" && (o.kind === "create" || o.kind === "update" || o.kind === "delete"))
      .sort((a, b) => endedAt(a) - endedAt(b));
    let rate: { monthly: number; currency: string } | null = null;
    let since = 0;
    let ran = false;
    let sum = 0;
    let currency = "";
    const accrue = (until: number) => {
      if (rate) {
        const a = Math.max(since, from);
        const b = Math.min(until, now);
        if (b > a) {
          sum += (rate.monthly * (b - a)) / (HOURS_PER_MONTH * 3600 * 1000);
          currency = rate.currency;
        }
      }
    };
    let live = false;
    for (const o of ops) {
      const t = endedAt(o);
      if (o.kind === "delete") {
        accrue(t);
        if (live && t >= from) ran = true;
        rate = null;
        live = false;
        continue;
      }
      live = true;
      if (o.estimate) {
        accrue(t);
        rate = { monthly: o.estimate.total_monthly, currency: o.estimate.currency };
        since = t;
      }
    }
    accrue(now);
    if (live) ran = true;
    if (live && rate) runRate[rate.currency] = (runRate[rate.currency] ?? 0) + rate.monthly;
    if (!ran) continue;
    if (currency) {
      totals[currency] = (totals[currency] ?? 0) + sum;
      counted++;
    } else if (!rate) unestimated.push(c.name);
    else counted++;
  }
  return { totals, unestimated, counted, rate: runRate };
}

import { describe, expect, it } from "vitest";
import { countByState, inFlight, monthToDate, recentFailures, type ClusterLike, type OperationLike } from "./model";

const H = 3600 * 1000;
const NOW = Date.UTC(2026, 10, 11, 0, 0, 0); // 11 Nov 2026: 10 days (240 h) into the month
const iso = (t: number) => new Date(t).toISOString();

function cl(id: string, state: string, last?: { status: string; kind?: string }): ClusterLike {
  return {
    id, name: `n-${id}`, state: state as ClusterLike["state"], created_at: iso(NOW - 1000 * H),
    last_operation: last ? { id: `op-${id}`, kind: (last.kind ?? "create") as "create", status: last.status as "running", created_at: iso(NOW), updated_at: iso(NOW) } : null,
  };
}

function op(kind: string, status: string, ended: number, monthly?: number): OperationLike {
  return {
    id: `op-${kind}-${ended}`, kind: kind as "create", status: status as "succeeded", created_at: iso(ended - H), updated_at: iso(ended), ended_at: iso(ended),
    error: status === "failed" ? { what: "boom", step: "apply", fix: "retry", category: "transient", retryable: true } : null,
    estimate: monthly === undefined ? null : { total_monthly: monthly, currency: "USD" },
  };
}

describe("dashboard figures", () => {
  it("counts clusters by state in lifecycle order", () => {
    const cs = [cl("a", "ACTIVE"), cl("b", "FAILED"), cl("c", "ACTIVE"), cl("d", "PROVISIONING"), cl("e", "DELETED")];
    expect(countByState(cs)).toEqual([
      { state: "PROVISIONING", count: 1 }, { state: "ACTIVE", count: 2 }, { state: "FAILED", count: 1 }, { state: "DELETED", count: 1 },
    ]);
    expect(countByState([])).toEqual([]);
  });

  it("operations in flight are last operations that have not ended", () => {
    const cs = [cl("a", "PROVISIONING", { status: "running" }), cl("b", "ACTIVE", { status: "succeeded" }), cl("c", "ACTIVE", { status: "awaiting_approval", kind: "update" }), cl("d", "ACTIVE")];
    expect(inFlight(cs).map((c) => c.id)).toEqual(["a", "c"]);
  });

  it("failures of the last 24 hours, newest first", () => {
    const cs = [cl("a", "FAILED"), cl("b", "ACTIVE")];
    const ops = new Map([
      ["a", [op("create", "failed", NOW - 2 * H), op("create", "failed", NOW - 30 * H)]],
      ["b", [op("update", "failed", NOW - 1 * H), op("update", "succeeded", NOW - 0.5 * H)]],
    ]);
    const f = recentFailures(ops, cs, NOW);
    expect(f.map((x) => `${x.cluster.id}:${x.op.kind}`)).toEqual(["b:update", "a:create"]);
  });

  it("prorates each plan's monthly estimate over the hours since the 1st, until a delete", () => {
    const cs = [cl("a", "ACTIVE"), cl("b", "DELETED"), cl("c", "ACTIVE"), cl("d", "FAILED")];
    const ops = new Map([
      // a: created last month at 73 $/month, updated 40 h ago to 146 $/month → 200 h × 0.1 + 40 h × 0.2 = 28
      ["a", [op("create", "succeeded", NOW - 1000 * H, 73), op("update", "succeeded", NOW - 40 * H, 146), op("drift-check", "succeeded", NOW - 2 * H)]],
      // b: created 100 h ago at 730 $/month, deleted 50 h ago → 50 h × 1 = 50
      ["b", [op("create", "succeeded", NOW - 100 * H, 730), op("delete", "succeeded", NOW - 50 * H)]],
      // c: running with no estimate → named, not counted
      ["c", [op("create", "succeeded", NOW - 10 * H)]],
      // d: its create failed → nothing ran
      ["d", [op("create", "failed", NOW - 10 * H, 500)]],
    ]);
    const m = monthToDate(cs, ops, NOW);
    expect(m.totals.USD).toBeCloseTo(78, 6);
    expect(m.counted).toBe(2);
    expect(m.unestimated).toEqual(["n-c"]);
    // Running now: a at its updated 146/month (b is deleted, c has no estimate).
    expect(m.rate).toEqual({ USD: 146 });
  });

  it("a cluster deleted last month costs nothing this month", () => {
    const cs = [cl("a", "DELETED")];
    const ops = new Map([["a", [op("create", "succeeded", NOW - 2000 * H, 730), op("delete", "succeeded", NOW - 1000 * H)]]]);
    expect(monthToDate(cs, ops, NOW)).toEqual({ totals: {}, unestimated: [], counted: 0, rate: {} });
  });
});

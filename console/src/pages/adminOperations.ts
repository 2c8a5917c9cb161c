// The operator's operations listing, its pure part: the filters a link carries and why an operation stands
// where it does.

import type { Schemas } from "../api/client";

type Row = Schemas["AdminOperation"];
type Kind = Schemas["AdminOperation"]["kind"];
type Status = Schemas["AdminOperation"]["status"];
export type OperationFilters = { tenant: string; cluster: string; kind: "" | Kind; status: "" | Status };

export const KINDS: Kind[] = ["create", "update", "delete", "plan", "drift-check", "restore-state", "estimate"];
export const STATUSES: Status[] = ["queued", "dispatched", "running", "awaiting_approval", "succeeded", "failed", "cancelled"];

/** The filters a link may carry (`/admin/operations?cluster=cl-…&status=failed`); unknown values are dropped. */
export function operationFiltersFrom(search: string): OperationFilters {
  const q = new URLSearchParams(search);
  const kind = (q.get("kind") ?? "").toLowerCase();
  const status = (q.get("status") ?? "").toLowerCase();
  return {
    tenant: q.get("tenant") ?? "",
    cluster: q.get("cluster") ?? "",
    kind: (KINDS as string[]).includes(kind) ? (kind as Kind) : "",
    status: (STATUSES as string[]).includes(status) ? (status as Status) : "",
  };
}

/** Why an operation stands where it does: its error (what, at which step, the fix) or why it waits. */
export function why(o: Pick<Row, "error" | "wait_reason">): string {
  if (o.error) return `${o.error.what} (at ${o.error.step}) — ${o.error.fix}`;
  return o.wait_reason ?? "";
}


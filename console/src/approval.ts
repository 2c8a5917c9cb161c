// Plan approvals (issue 22), the pure part: how an operation's approval reads (summary, actions, decision),
// whether the approve/reject buttons show, what the approval selects send, and which problems to explain.
// No import of api/client (it needs `location`), so the unit tests need no browser.

import type { components } from "./api/schema";

type S = components["schemas"];
export type Approval = S["Approval"];
export type ApprovalDecision = S["ApprovalDecision"];
export type PlanSummary = S["PlanSummaryView"];

/** Statuses after which nothing more happens. `awaiting_approval` is not one: it waits for an approver. */
export const ENDED: readonly string[] = ["succeeded", "failed", "cancelled"];

export function isEnded(status: string): boolean {
  return ENDED.includes(status);
}

/** A status or state as people read it: `awaiting_approval` → "awaiting approval". */
export function statusLabel(status: string): string {
  return status.replace(/_/g, " ");
}

/** "1 to add, 0 to change, 0 to destroy" (Terraform's words). */
export function summaryText(s: PlanSummary): string {
  return `${s.add} to add, ${s.change} to change, ${s.destroy} to destroy`;
}

/** Terraform's action list of one resource as one word; a delete and a create is a replace. */
export function actionLabel(actions: readonly string[]): string {
  const a = actions.join(",");
  switch (a) {
    case "create": return "create";
    case "update": return "update in place";
    case "delete": return "destroy";
    case "delete,create": return "replace";
    case "create,delete": return "replace (create before destroy)";
    case "read": return "read";
    case "no-op":
    case "": return "no change";
    default: return actions.join(", ");
  }
}

/** The short form of the plan's SHA-256 shown beside the full one (in a title). */
export function shortSha(sha: string, n = 12): string {
  return sha.length > n ? `${sha.slice(0, n)}…` : sha;
}

/** The approve and reject buttons show only while the operation waits and nobody has decided. */
export function canDecide(status: string, approval: Approval | null | undefined): boolean {
  return status === "awaiting_approval" && !!approval && !approval.decision;
}

const VERDICTS: Record<string, string> = {
  approved: "Approved",
  rejected: "Rejected",
  expired: "Expired (nobody answered in time)",
  cancelled: "Cancelled",
};

export function verdictLabel(verdict: string): string {
  return VERDICTS[verdict] ?? verdict;
}

export const MAX_COMMENT = 1000;

/** The approver's comment: optional, at most 1,000 characters. */
export function validateComment(raw: string): string[] {
  return [...raw].length > MAX_COMMENT ? [`at most ${MAX_COMMENT} characters (now ${[...raw].length})`] : [];
}

/** What approve/reject send: the trimmed comment (or none), and always the plan shown — its checksum, round
 * and stage — so the API refuses the decision (409 `plan-changed`) if another plan is pending by then. */
export type DecisionBody = { comment?: string; plan_sha256: string; round: number; stage: string };

export function decisionBody(raw: string, shown: Pick<Approval, "plan_sha256" | "round" | "stage">): DecisionBody {
  const c = raw.trim();
  const plan = { plan_sha256: shown.plan_sha256, round: shown.round, stage: shown.stage };
  return c ? { comment: c, ...plan } : plan;
}

/** A refused approve/reject explained: another plan pending, self-approval, a missing scope, or a decision no
 * longer possible. */
export function decisionProblem(p: { type?: string; title: string; status: number; detail: string; request_id?: string | null }): string {
  const rid = p.request_id ? ` (request ${p.request_id})` : "";
  const api = `${p.title}: ${p.detail}${rid}`;
  if (p.type?.endsWith(":plan-changed")) return `Another plan is pending than the one shown (Strato planned again, or another stage waits); nothing was decided and the operation was reloaded: review the plan now shown and decide again. ${api}`;
  if (p.type?.endsWith(":self-approval")) return `You asked for this operation, so you cannot decide on it yourself (separation of duties): another approver must. ${api}`;
  if (p.status === 403) return `Your token may not approve or reject plans (it needs the operations:approve scope). ${api}`;
  if (p.status === 409) return `The operation no longer waits for a decision (decided, expired or cancelled); it was reloaded. ${api}`;
  return api;
}

/** The approval select of the create form and the cluster page: "" is the template's or tenant's default. */
export type ApprovalChoice = "" | "required" | "auto";

export function choiceOf(mode: string | null | undefined): ApprovalChoice {
  return mode === "required" || mode === "auto" ? mode : "";
}

/** The cluster's mode as shown. */
export function modeText(mode: string | null | undefined): string {
  const c = choiceOf(mode);
  return c || "default (template/tenant)";
}

/** PATCH /v1/clusters/{id}: `approval` is null to go back to the default. */
export function patchApproval(choice: ApprovalChoice): { approval: "required" | "auto" | null } {
  return { approval: choice || null };
}

/** POST /v1/clusters: no `approval` member for the default. */
export function createApproval(choice: ApprovalChoice): { approval?: "required" | "auto" } {
  return choice ? { approval: choice } : {};
}

/** Whether a cluster's last operation waits for an approver (the clusters list and the cluster page mark it). */
export function awaitingApproval(last: { status: string } | null | undefined): boolean {
  return last?.status === "awaiting_approval";
}

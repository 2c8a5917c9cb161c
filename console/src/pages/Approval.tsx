// Plan approvals (issue 22): an operation's approval (the plan's summary and changes, its checksum, the
// decision) with approve/reject while it waits; the "awaiting approval" mark of a cluster; a cluster's
// approval mode (PATCH `approval`).

import { useState } from "preact/hooks";
import { api, asProblem, idempotencyKey, problemText, type Cluster, type Operation } from "../api/client";
import {
  MAX_COMMENT, actionLabel, awaitingApproval, canDecide, choiceOf, decisionBody, decisionProblem, modeText, patchApproval, shortSha,
  summaryText, validateComment, verdictLabel, type ApprovalChoice,
} from "../approval";
import { currentToken, tokenClaims } from "../auth";
import { untilText } from "../form/lifetime";
import { Link, ProblemBox, when, ListHead } from "../ui";

export function ApprovalSection({ op, onDecided }: { op: Operation; onDecided(): void }) {
  const a = op.approval;
  const [comment, setComment] = useState("");
  const [busy, setBusy] = useState<"approve" | "reject" | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  if (!a) {
    return op.approval_required && op.status !== "succeeded" && op.status !== "failed" && op.status !== "cancelled" ? (
      <p class="help" data-testid="approval-pending">Its plan waits for an approver before anything is applied.</p>
    ) : null;
  }
  const decide = canDecide(op.status, a);
  const bad = validateComment(comment);
  const me = tokenClaims(currentToken() ?? "").sub;
  const submit = async (verdict: "approve" | "reject") => {
    if (bad.length || busy) return;
    setBusy(verdict);
    setErr(null);
    setDone(null);
    const params = { path: { id: op.id }, header: { "Idempotency-Key": idempotencyKey() } };
    // The plan shown on this page, named: a decision never lands on another round or stage.
    const body = decisionBody(comment, a);
    const { data, error, response } = verdict === "approve"
      ? await api.POST("/v1/operations/{id}/approve", { params, body })
      : await api.POST("/v1/operations/{id}/reject", { params, body });
    setBusy(null);
    if (error || !data) {
      const p = asProblem(error, response);
      setErr(p.status === 403 || p.status === 409 ? decisionProblem(p) : problemText(p));
      if (p.status === 409) onDecided();
      return;
    }
    setComment("");
    setDone(verdict === "approve" ? "Approved: a runner applies exactly this plan." : "Rejected: the operation ends cancelled, nothing applied.");
    onDecided();
  };
  return (
    <section class="approval" data-testid="approval" aria-labelledby="approval-h">
      <h2 id="approval-h">Approval</h2>
      <p data-testid="approval-summary"><strong>Plan: {summaryText(a.summary)}</strong></p>
      <dl class="facts">
        <dt>Round</dt><dd>{a.round}{a.round > 1 ? " (the state changed since the last plan, so Strato planned again)" : ""}</dd>
        <dt>Stage</dt><dd>{a.stage}</dd>
        <dt>Plan checksum</dt><dd><code title={a.plan_sha256} data-testid="approval-sha">{shortSha(a.plan_sha256)}</code> <span class="help">(SHA-256; only this plan is applied)</span></dd>
        <dt>Requested</dt><dd>{when(a.requested_at)}</dd>
        <dt>Expires</dt><dd>{when(a.expires_at)}{decide ? ` (${untilText(a.expires_at)}; unanswered, the operation ends cancelled)` : ""}</dd>
      </dl>
      {a.changes.length ? (
        // Once decided, the plan is history: its resources fold away (the approver saw them open).
        <details open={!a.decision}>
          <summary>{a.changes.length} resource{a.changes.length === 1 ? "" : "s"} by address</summary>
          <table class="list" data-testid="approval-changes">
            <ListHead caption="Resources the plan changes" columns={["Resource", "Action"]} />
            <tbody>
              {a.changes.map((c) => (
                <tr><td class="wrap"><code>{c.address}</code></td><td>{actionLabel(c.actions)}</td></tr>
              ))}
            </tbody>
          </table>
        </details>
      ) : <p class="help" data-testid="approval-changes">The plan changes no resource.</p>}
      {a.decision ? (
        <div data-testid="approval-decision">
          <p>
            <strong>{verdictLabel(a.decision.verdict)}</strong> by <code>{a.decision.by}</code> at {when(a.decision.at)}
            {a.decision.comment ? ":" : "."}
          </p>
          {a.decision.comment ? <blockquote>{a.decision.comment}</blockquote> : null}
        </div>
      ) : null}
      {decide ? (
        <form onSubmit={(e) => { e.preventDefault(); void submit("approve"); }} noValidate aria-label="Decide on the plan">
          {me && op.requested_by === me ? (
            <p class="help">You asked for this operation: unless separation of duties is off, another approver has to decide.</p>
          ) : null}
          <div class={`field${bad.length ? " invalid" : ""}`}>
            <label for="approval-comment">Comment (optional, for the record)</label>
            <textarea id="approval-comment" data-testid="approval-comment" rows={3} value={comment}
              onInput={(e) => setComment((e.target as HTMLTextAreaElement).value)}
              aria-invalid={bad.length ? "true" : undefined} aria-describedby={bad.length ? "approval-comment-err" : "approval-comment-help"} />
            {bad.length
              ? <ul class="field-errors" id="approval-comment-err"><li>{bad[0]}</li></ul>
              : <p class="help" id="approval-comment-help">At most {MAX_COMMENT} characters; shown on the operation and in the audit log.</p>}
          </div>
          <div class="actions">
            <button type="submit" data-testid="approve" disabled={!!busy || bad.length > 0}>{busy === "approve" ? "Approving…" : "Approve plan"}</button>
            <button type="button" class="danger" data-testid="reject" disabled={!!busy || bad.length > 0} onClick={() => void submit("reject")}>
              {busy === "reject" ? "Rejecting…" : "Reject plan"}
            </button>
          </div>
        </form>
      ) : null}
      {done ? <p role="status">{done}</p> : null}
      {err ? <div data-testid="approval-error"><ProblemBox problem={err} label="Not decided" /></div> : null}
    </section>
  );
}

/** The mark of a cluster whose last operation waits for an approver, linking to that operation. */
export function AwaitingApproval({ last }: { last: Cluster["last_operation"] }) {
  if (!last || !awaitingApproval(last)) return null;
  return (
    <Link href={`/operations/${encodeURIComponent(last.id)}`} class="badge badge-awaiting_approval" data-testid="awaiting-approval"
      aria-label={`awaiting approval: ${last.kind} operation ${last.id}`}>
      awaiting approval
    </Link>
  );
}

export function ApprovalMode({ cluster: c, onSaved }: { cluster: Cluster; onSaved(): void }) {
  const [choice, setChoice] = useState<ApprovalChoice>(choiceOf(c.approval));
  const [problem, setProblem] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const changed = choice !== choiceOf(c.approval);
  const submit = async (e: Event) => {
    e.preventDefault();
    setProblem(null);
    setSaved(null);
    const { data, error, response } = await api.PATCH("/v1/clusters/{id}", {
      params: { path: { id: c.id }, header: { "If-Match": `"${c.version}"`, "Idempotency-Key": idempotencyKey() } },
      body: patchApproval(choice),
    });
    if (error || !data) setProblem(problemText(asProblem(error, response)));
    else {
      setSaved(`Approval mode saved: ${modeText(choice)}. It applies to operations asked for from now on.`);
      onSaved();
    }
  };
  return (
    <div data-testid="approval-mode">
      <p>
        Plans of this cluster's creates and updates: approval <strong data-testid="approval-mode-current">{modeText(c.approval)}</strong>
        {choiceOf(c.approval) === "required" ? " — an approver (operations:approve) must approve each plan before anything is applied." : ""}
        {choiceOf(c.approval) === "auto" ? " — applied at once, unless the template or the tenant requires approval (the strictest applies)." : ""}
      </p>
      <form onSubmit={submit} noValidate aria-label="Approval mode" class="row-fields">
        <div class="field">
          <label for="a-mode">Approval of plans</label>
          <select id="a-mode" data-testid="approval-mode-select" value={choice} onChange={(e) => setChoice((e.target as HTMLSelectElement).value as ApprovalChoice)}>
            <option value="">default (template/tenant)</option>
            <option value="required">required</option>
            <option value="auto">auto</option>
          </select>
        </div>
        <div class="field">
          <button type="submit" disabled={!changed}>Save approval mode</button>
        </div>
      </form>
      {saved ? <p role="status">{saved}</p> : null}
      <ProblemBox problem={problem} />
    </div>
  );
}

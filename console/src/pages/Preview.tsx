// "Preview": a speculative plan of the update being edited (POST /v1/clusters/{id}/plan), waited for, then
// what it would do — the changes by address (+ create, ~ update, - delete, ± replace), the policy results and
// the monthly cost difference. Nothing is applied; the cluster does not change.

import { useEffect, useRef, useState } from "preact/hooks";
import { api, asProblem, idempotencyKey, problemText, waitOperation, type Problem, type Schemas } from "../api/client";
import { ProblemBox } from "../ui";
import { money } from "./Estimate";

export type PreviewResult = Schemas["Preview"];

/** The header of a preview: its counts, as the CLI says them. */
export function previewCounts(p: PreviewResult): string {
  const c = p.counts;
  return `${c.add} to add, ${c.change} to change, ${c.destroy} to destroy, ${c.replace} to replace`;
}

export function PreviewButton({ clusterId, body, disabled, onFieldErrors }: {
  clusterId: string;
  body: { variables: Record<string, unknown> | null; template_version: string | null };
  disabled: boolean;
  onFieldErrors(p: Problem): void;
}) {
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ op: string; preview: PreviewResult | null; status: string } | null>(null);
  const [problem, setProblem] = useState<Problem | string | null>(null);
  const stop = useRef<AbortController | null>(null);
  useEffect(() => () => stop.current?.abort(), []);
  const run = async () => {
    setBusy(true);
    setResult(null);
    setProblem(null);
    stop.current?.abort();
    const ctl = new AbortController();
    stop.current = ctl;
    try {
      const { data, error, response } = await api.POST("/v1/clusters/{id}/plan", {
        params: { path: { id: clusterId }, header: { "Idempotency-Key": idempotencyKey() } },
        body,
      });
      if (error || !data) {
        const p = asProblem(error, response);
        onFieldErrors(p);
        setProblem(p);
        return;
      }
      const op = await waitOperation(data.operation.id, ctl.signal);
      setResult({ op: op.id, preview: op.preview ?? null, status: op.status });
      if (op.status !== "succeeded") setProblem(op.error ? `${op.error.what} ${op.error.fix}` : `The preview ended ${op.status}.`);
    } catch (e) {
      if (!ctl.signal.aborted) setProblem(String(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" class="secondary" disabled={disabled || busy} onClick={run} aria-describedby="preview-help">
        {busy ? "Previewing…" : "Preview"}
      </button>
      <span id="preview-help" class="sr-only">Plans the change and shows what it would do and cost; applies nothing.</span>
      <div class="preview-result" aria-live="polite">
        <ProblemBox problem={problem ? (typeof problem === "string" ? problem : problemText(problem)) : null} />
        {result?.preview ? <PreviewView preview={result.preview} op={result.op} /> : null}
      </div>
    </>
  );
}

const MARK_CLASS: Record<string, string> = { create: "add", update: "change", delete: "destroy", replace: "destroy" };

export function PreviewView({ preview: p, op }: { preview: PreviewResult; op: string }) {
  const cost = p.cost;
  return (
    <section aria-label="Preview of the change" class="preview">
      <h3>Preview: {previewCounts(p)}</h3>
      {p.changes.length === 0 ? <p>No resource would change.</p> : (
        <ul class="changes">
          {p.changes.map((c) => (
            <li>
              <code class={MARK_CLASS[c.action] ?? ""} aria-label={c.action}>{c.marker}</code> <code>{c.address}</code>
              {c.action === "replace" ? <strong> replaced (destroyed, then created)</strong> : null}
            </li>
          ))}
        </ul>
      )}
      <p>
        Monthly cost: <strong data-testid="cost-difference">{cost.difference}</strong>{" "}
        ({money(cost.current_monthly, cost.currency)} → {money(cost.proposed_monthly, cost.currency)})
      </p>
      {cost.not_estimated.length ? <p class="help">Without a price (left out of both figures): {cost.not_estimated.join(", ")}</p> : null}
      <p>
        Policies: {p.policy.denied.length} denied, {p.policy.warnings.length} warning(s)
        {p.policy.denied.length ? <strong> — the update would be refused</strong> : null}
      </p>
      {p.policy.denied.length || p.policy.warnings.length ? (
        <ul>
          {p.policy.denied.map((d) => <li>Denied: {d}</li>)}
          {p.policy.warnings.map((w) => <li>Warning: {w}</li>)}
        </ul>
      ) : null}
      <p class="help">Nothing was applied (operation <code>{op}</code>). Apply the changes to make them.</p>
    </section>
  );
}

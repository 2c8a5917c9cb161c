// One cluster: state, error, outputs, drift, approval mode, operations, state versions, update, retry, delete.

import { useState } from "preact/hooks";
import { api, asProblem, idempotencyKey, problemText, type Cluster } from "../api/client";
import { ConfirmDialog } from "../dialog";
import { navigate } from "../router";
import { Link, PageTitle, ProblemBox, StateBadge, usePoll, when } from "../ui";
import { DriftSettings, OperationsList, StateVersions, UpdateVariables } from "./ClusterParts";
import { ApprovalMode, AwaitingApproval } from "./Approval";
import { ExpirySettings } from "./Expiry";

const BUSY = ["PENDING", "PROVISIONING", "CONFIGURING", "UPDATING", "DELETING"];

function show(v: unknown): string {
  return typeof v === "string" ? v : JSON.stringify(v);
}

/** Long values (certificates, kubeconfigs) start folded. */
export function Value({ v, label }: { v: string; label: string }) {
  if (v.length <= 160) return <>{v}</>;
  return (
    <details>
      <summary>
        {v.slice(0, 60)}… <span class="sr-only">show all of {label}</span>({v.length} characters)
      </summary>
      {v}
    </details>
  );
}

export function ClusterPage({ id }: { id: string }) {
  const { data: c, error, reload, setData } = usePoll(
    async (signal) => {
      const { data, error, response } = await api.GET("/v1/clusters/{id}", { params: { path: { id } }, signal });
      if (error || !data) throw asProblem(error, response);
      return data;
    },
    3000,
    [id],
  );
  const [dialog, setDialog] = useState<"delete" | null>(null);
  const [msg, setMsg] = useState<string | null>(null);
  const [actErr, setActErr] = useState<string | null>(null);

  const act = async (what: string, call: () => Promise<{ data?: { operation: { id: string }; cluster?: Cluster }; error?: unknown; response: Response }>) => {
    setActErr(null);
    const { data, error, response } = await call();
    if (error || !data) {
      setActErr(`${what}: ${problemText(asProblem(error, response))}`);
      return;
    }
    if (data.cluster) setData(data.cluster);
    setMsg(`${what}: operation ${data.operation.id} queued.`);
    navigate(`/operations/${encodeURIComponent(data.operation.id)}`);
  };

  if (!c) {
    return (
      <section>
        <PageTitle>Cluster {id}</PageTitle>
        {error ? <ProblemBox problem={error} label="Could not read the cluster" /> : <p>Loading…</p>}
        <p><Link href="/clusters">Back to clusters</Link></p>
      </section>
    );
  }
  const headers = { "Idempotency-Key": idempotencyKey() };
  return (
    <section>
      <PageTitle>Cluster {c.name}</PageTitle>
      <p>
        <StateBadge state={c.state} /> <AwaitingApproval last={c.last_operation} /> <span class="help">{c.id}</span>
      </p>
      {c.last_operation?.status === "awaiting_approval" ? (
        <p class="help">Its {c.last_operation.kind} operation waits with its plan for an approver; open it to see the plan and decide.</p>
      ) : null}
      <dl class="facts">
        <dt>Template</dt><dd>{c.template.name}@{c.template.version}</dd>
        <dt>Provider / region</dt><dd>{c.provider} / {c.region}</dd>
        <dt>Created</dt><dd>{when(c.created_at)}</dd>
        <dt>Updated</dt><dd>{when(c.updated_at)}</dd>
      </dl>
      {c.last_error ? (
        <div class="problem" role="alert">
          <strong>{c.last_error.what}</strong> (step {c.last_error.step}, {c.last_error.category}
          {c.last_error.retryable ? ", retryable" : ""}). <br />
          Fix: {c.last_error.fix}
        </div>
      ) : null}
      <div class="actions" aria-live="polite">
        {c.state === "FAILED" ? (
          <button type="button" onClick={() => act("Retry", () => api.POST("/v1/clusters/{id}/retry", { params: { path: { id }, header: headers } }))}>
            Retry
          </button>
        ) : null}
        <button
          type="button"
          class="secondary"
          disabled={c.state !== "ACTIVE"}
          onClick={() => act("Drift check", () => api.POST("/v1/clusters/{id}/drift-check", { params: { path: { id }, header: headers } }))}
        >
          Check drift
        </button>
        <button type="button" class="danger" disabled={c.state === "DELETED" || c.state === "DELETING"} onClick={() => setDialog("delete")}>
          Delete cluster
        </button>
        <button type="button" class="secondary" onClick={reload}>Refresh</button>
      </div>
      {msg ? <p role="status">{msg}</p> : null}
      <ProblemBox problem={actErr} />
      {BUSY.includes(c.state) ? <p class="help">An operation is in progress; this page refreshes every 3 s.</p> : null}

      <h2>Outputs</h2>
      {Object.keys(c.outputs ?? {}).length ? (
        <table class="list">
          <caption class="sr-only">Outputs (sensitive values are masked by the API)</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Value</th></tr></thead>
          <tbody>
            {Object.entries(c.outputs).map(([k, v]) => (
              <tr><td><code>{k}</code></td><td class="wrap"><Value v={show(v)} label={k} /></td></tr>
            ))}
          </tbody>
        </table>
      ) : <p class="help">No outputs yet.</p>}

      <h2>Drift</h2>
      <p>
        {c.drift.drifted ? <span class="badge badge-drift">Drifted</span> : c.drift.checked_at ? "In sync" : "Not checked yet"}
        {c.drift.checked_at ? ` — checked ${when(c.drift.checked_at)}` : ""}; policy <strong>{c.drift.policy}</strong>, every {c.drift.interval_hours} h.
      </p>
      {c.drift.changed_resources.length ? (
        <table class="list">
          <caption class="sr-only">Resources that drifted</caption>
          <thead><tr><th scope="col">Resource</th><th scope="col">Actions to undo the drift</th></tr></thead>
          <tbody>
            {c.drift.changed_resources.map((r) => (
              <tr><td><code>{r.address}</code></td><td>{r.actions.join(", ")}</td></tr>
            ))}
          </tbody>
        </table>
      ) : null}

      <DriftSettings key={c.version} cluster={c} onSaved={reload} />

      <h2>Approval</h2>
      <ApprovalMode cluster={c} onSaved={reload} />

      <h2>Expiry</h2>
      <ExpirySettings key={`x-${c.version}`} cluster={c} onSaved={reload} />

      <h2>Variables</h2>
      <UpdateVariables cluster={c} onQueued={(opId) => navigate(`/operations/${encodeURIComponent(opId)}`)} />

      <h2>Operations</h2>
      <OperationsList clusterId={c.id} />

      <h2>State versions</h2>
      <StateVersions clusterId={c.id} />

      {dialog === "delete" ? (
        <ConfirmDialog
          title={`Delete cluster ${c.name}?`}
          confirmLabel="Delete cluster"
          danger
          typeToConfirm={c.name}
          onClose={() => setDialog(null)}
          onConfirm={() => act("Delete", () => api.DELETE("/v1/clusters/{id}", { params: { path: { id }, header: headers } }))}
        >
          <p>This destroys every cloud resource of the cluster. It cannot be undone.</p>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}

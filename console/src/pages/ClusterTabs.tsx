// The cluster page's tabs that are more than one list: Overview (state, error, Connect, outputs, drift,
// non-destructive actions) and Settings (drift, approval, expiry, and the danger zone).

import { useState } from "preact/hooks";
import { api, type Cluster } from "../api/client";
import { ConfirmDialog } from "../dialog";
import { Link, when, ListHead } from "../ui";
import { ApprovalMode } from "./Approval";
import type { Act } from "./act";
import { DriftSettings } from "./ClusterParts";
import { ConnectPanel } from "./Connect";
import { ExpirySettings } from "./Expiry";
import { HealthPanel } from "./Health";

export const TABS = [
  { id: "overview", title: "Overview" },
  { id: "variables", title: "Variables" },
  { id: "operations", title: "Operations" },
  { id: "state", title: "State" },
  { id: "settings", title: "Settings" },
] as const;

export type TabId = (typeof TABS)[number]["id"];

/** The tab a URL segment names; anything else is the overview. */
export function tabOf(seg: string | undefined): TabId {
  return TABS.find((t) => t.id === seg)?.id ?? "overview";
}

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

export function ClusterOverview({ cluster: c, act, reload }: { cluster: Cluster; act: Act; reload(): void }) {
  const headers = { "Idempotency-Key": crypto.randomUUID() };
  const id = c.id;
  return (
    <>
      {c.last_operation?.status === "awaiting_approval" ? (
        <p class="help">Its {c.last_operation.kind} operation waits with its plan for an approver; open it to see the plan and decide.</p>
      ) : null}
      {c.last_error ? (
        <div class="problem" role="alert">
          <strong>{c.last_error.what}</strong> (step {c.last_error.step}, {c.last_error.category}
          {c.last_error.retryable ? ", retryable" : ""}). <br />
          Fix: {c.last_error.fix}
        </div>
      ) : null}
      <div class="overview">
        <div>
          <dl class="facts">
            <dt>Created</dt><dd>{when(c.created_at)}</dd>
            <dt>Updated</dt><dd>{when(c.updated_at)}</dd>
            <dt>Expires</dt><dd>{c.expires_at ? when(c.expires_at) : "never"}</dd>
            <dt>Last operation</dt>
            <dd>{c.last_operation ? <Link href={`/operations/${encodeURIComponent(c.last_operation.id)}`}>{c.last_operation.kind}, {c.last_operation.status.replace(/_/g, " ")}</Link> : "—"}</dd>
          </dl>
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
            <button type="button" class="secondary" onClick={reload}>Refresh</button>
          </div>
        </div>
        {c.state === "DELETED" ? null : <ConnectPanel id={c.id} name={c.name} ready={`${c.state}-${c.version}`} />}
      </div>

      <HealthPanel health={c.health} />

      <h2>Outputs</h2>
      {Object.keys(c.outputs ?? {}).length ? (
        <table class="list">
          <ListHead caption="Outputs (sensitive values are masked by the API)" columns={["Name", "Value"]} />
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
        {c.drift.checked_at ? ` — checked ${when(c.drift.checked_at)}` : ""}; policy <strong>{c.drift.policy}</strong>, every {c.drift.interval_hours} h
        {" "}(<Link href={`/clusters/${encodeURIComponent(c.id)}/settings`}>change</Link>).
      </p>
      {c.drift.changed_resources.length ? (
        <table class="list">
          <ListHead caption="Resources that drifted" columns={["Resource", "Actions to undo the drift"]} />
          <tbody>
            {c.drift.changed_resources.map((r) => (
              <tr><td><code>{r.address}</code></td><td>{r.actions.join(", ")}</td></tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </>
  );
}

export function ClusterSettings({ cluster: c, act, reload, headers }: { cluster: Cluster; act: Act; reload(): void; headers: { "Idempotency-Key": string } }) {
  const [dialog, setDialog] = useState(false);
  const gone = c.state === "DELETED" || c.state === "DELETING";
  return (
    <>
      <h2>Drift</h2>
      <DriftSettings key={c.version} cluster={c} onSaved={reload} />

      <h2>Approval</h2>
      <ApprovalMode cluster={c} onSaved={reload} />

      <h2>Expiry</h2>
      <ExpirySettings key={`x-${c.version}`} cluster={c} onSaved={reload} />

      <section class="danger-zone" aria-labelledby="danger-h">
        <h2 id="danger-h">Danger zone</h2>
        <div class="danger-row">
          <div>
            <strong>Delete this cluster</strong>
            <p class="help">Destroys every cloud resource of {c.name}. It cannot be undone; you type the cluster's name to confirm.</p>
          </div>
          <button type="button" class="danger" disabled={gone} onClick={() => setDialog(true)}>
            Delete cluster
          </button>
        </div>
      </section>

      {dialog ? (
        <ConfirmDialog
          title={`Delete cluster ${c.name}?`}
          confirmLabel="Delete cluster"
          danger
          typeToConfirm={c.name}
          onClose={() => setDialog(false)}
          onConfirm={() => act("Delete", () => api.DELETE("/v1/clusters/{id}", { params: { path: { id: c.id }, header: headers } }))}
        >
          <p>This destroys every cloud resource of the cluster. It cannot be undone.</p>
        </ConfirmDialog>
      ) : null}
    </>
  );
}

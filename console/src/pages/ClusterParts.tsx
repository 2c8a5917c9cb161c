// Parts of the cluster page: its operations, its state versions (restore behind a confirmation naming
// the version), and the variables form (PATCH with If-Match).

import { useMemo, useState } from "preact/hooks";
import { api, asProblem, idempotencyKey, problemText, type Cluster, type Problem } from "../api/client";
import { isEnded } from "../approval";
import { ConfirmDialog } from "../dialog";
import { VariableField } from "../form/Fields";
import {
  SENSITIVE_MASK, checkRules, asRules, fieldsFromTemplate, mapFieldErrors, toValue, validateField, type FieldError, type FieldModel, type RawValue,
} from "../form/schema";
import { Link, ProblemBox, StateBadge, duration, usePoll, when } from "../ui";
import type { ComponentChildren } from "preact";
import { withCatalog } from "../catalog/catalog";
import { groupFields } from "../form/sections";
import { fieldLabel, valueText } from "../form/words";
import { PreviewButton } from "./Preview";

export function OperationsList({ clusterId }: { clusterId: string }) {
  const { data, error } = usePoll(async (signal) => {
    const { data, error, response } = await api.GET("/v1/clusters/{id}/operations", { params: { path: { id: clusterId } }, signal });
    if (error || !data) throw asProblem(error, response);
    return data.operations;
  }, 5000, [clusterId]);
  if (error) return <ProblemBox problem={error} label="Could not list operations" />;
  if (!data) return <p>Loading…</p>;
  const ops = data;
  return (
    <table class="list">
      <caption class="sr-only">Operations, newest first</caption>
      <thead><tr><th scope="col">Operation</th><th scope="col">Kind</th><th scope="col">Status</th><th scope="col">Started</th><th scope="col">Took</th></tr></thead>
      <tbody>
        {ops.map((o) => (
          <tr key={o.id}>
            <td><Link href={`/operations/${encodeURIComponent(o.id)}`}>{o.id}</Link></td>
            <td>{o.kind}</td>
            <td><StateBadge state={o.status} /></td>
            <td>{when(o.created_at)}</td>
            <td>{isEnded(o.status) ? duration(Date.parse(o.updated_at) - Date.parse(o.created_at)) : "—"}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The cluster's Terraform state versions. In Strato's bucket a restore is done at once; in the customer's own
 * storage the list is the one the last run made, and a restore queues an operation (followed on its page). */
export function StateVersions({ clusterId, onQueued }: { clusterId: string; onQueued(op: string): void }) {
  const { data, error, reload } = usePoll(async (signal) => {
    const { data, error, response } = await api.GET("/v1/clusters/{id}/state-versions", { params: { path: { id: clusterId } }, signal });
    if (error || !data) throw asProblem(error, response);
    return data;
  }, 0, [clusterId]);
  const [pick, setPick] = useState<{ stage: string; version: string } | null>(null);
  const [result, setResult] = useState<string | null>(null);
  const [err, setErr] = useState<string | null>(null);
  if (error) return <ProblemBox problem={error} label="Could not list state versions" />;
  if (!data) return <p>Loading…</p>;
  return (
    <div>
      {data.source ? (
        <p class="help" data-testid="state-source">
          The state is in your {data.source.storage}.{" "}
          {data.source.listed_at && data.source.operation_id ? (
            <>Listed by operation <Link href={`/operations/${encodeURIComponent(data.source.operation_id)}`}><code>{data.source.operation_id}</code></Link> at {when(data.source.listed_at)}. </>
          ) : null}
          {data.source.note}
        </p>
      ) : null}
      {data.items.length === 0 ? <p class="help">{data.source ? "No version listed yet." : "No state stored yet."}</p> : (
        <table class="list">
          <caption class="sr-only">Terraform state versions</caption>
          <thead><tr><th scope="col">Stage</th><th scope="col">Version</th><th scope="col">Stored</th><th scope="col">Size</th><th scope="col"><span class="sr-only">Action</span></th></tr></thead>
          <tbody>
            {data.items.map((v) => (
              <tr>
                <td>{v.stage}</td>
                <td><code>{v.version_id}</code>{v.is_latest ? " (latest)" : ""}</td>
                <td>{when(v.last_modified)}</td>
                <td>{v.size} B</td>
                <td>
                  {v.is_latest ? null : (
                    <button type="button" class="secondary" aria-label={`Restore version ${v.version_id} of ${v.stage}`} onClick={() => setPick({ stage: v.stage, version: v.version_id })}>
                      Restore
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {data.restores.length ? (
        <p class="help">
          Restores: {data.restores.map((r) => `${r.from_version} → ${r.new_version} by ${r.restored_by} at ${when(r.at)}`).join("; ")}
        </p>
      ) : null}
      {result ? <p role="status">{result}</p> : null}
      <ProblemBox problem={err} />
      {pick ? (
        <ConfirmDialog
          title={`Restore state version ${pick.version}?`}
          confirmLabel={`Restore version ${pick.version}`}
          danger
          onClose={() => setPick(null)}
          onConfirm={async () => {
            setErr(null);
            const { data, error, response } = await api.POST("/v1/clusters/{id}/state-versions/{version}/restore", {
              params: { path: { id: clusterId, version: pick.version }, header: { "Idempotency-Key": idempotencyKey() } },
            });
            if (error || !data) setErr(problemText(asProblem(error, response)));
            else if ("operation" in data) {
              // The customer's storage: a run restores it; its page shows the log and the outcome.
              onQueued(data.operation.id);
              return;
            } else setResult(`Restored ${data.stage}: ${data.from_version} is now the latest as ${data.new_version}.`);
            reload();
          }}
        >
          <p>
            Stage <strong>{pick.stage}</strong>: version <code>{pick.version}</code> becomes the latest state. Terraform will plan against it
            on the next operation.{data.source ? ` The state is in your ${data.source.storage}: a restore-state operation does the copy there.` : ""}
          </p>
        </ConfirmDialog>
      ) : null}
    </div>
  );
}

function fromCurrent(f: FieldModel, v: unknown): RawValue {
  const g = { ...f, default: v === undefined ? f.default : v };
  if (f.kind === "bool") return g.default === true;
  if (f.kind === "list") return Array.isArray(g.default) ? g.default.map(String) : [];
  if (f.kind === "map") return g.default && typeof g.default === "object" ? Object.entries(g.default as object).map(([k, x]) => [k, String(x)] as [string, string]) : [];
  return g.default === undefined || g.default === null || g.default === SENSITIVE_MASK ? "" : String(g.default);
}

/** The body an update sends (PATCH /v1/clusters/{id}); also what a preview of the update would plan. */
export interface UpdateBody {
  variables: Record<string, unknown> | null;
  template_version: string | null;
}

/**
 * The variables table and the update form. `extraActions` renders beside "Apply changes" with the body the
 * update would send (e.g. a Preview button); `sections` groups the fields like the create form.
 */
export function UpdateVariables({ cluster: c, onQueued, extraActions }: { cluster: Cluster; onQueued(op: string): void; extraActions?: (body: UpdateBody, changed: boolean) => ComponentChildren }) {
  const tpl = usePoll(async (signal) => {
    const { data, error, response } = await api.GET("/v1/templates/{name}", { params: { path: { name: c.template.name }, query: { version: c.template.version } }, signal });
    if (error || !data) throw asProblem(error, response);
    return data;
  }, 0, [c.template.name, c.template.version]);
  const fields = useMemo(() => (tpl.data ? withCatalog(fieldsFromTemplate(tpl.data, c.provider), c.provider) : []), [tpl.data]);
  const current = c.variables as Record<string, unknown>;
  const [edit, setEdit] = useState<Record<string, RawValue> | null>(null);
  const [version, setVersion] = useState(c.template.version);
  const [apiErrs, setApiErrs] = useState<Record<string, FieldError[]>>({});
  const [problem, setProblem] = useState<Problem | null>(null);
  if (tpl.error) return <ProblemBox problem={tpl.error} label="Could not read the template" />;
  if (!tpl.data) return <p>Loading…</p>;
  if (!edit) {
    return (
      <div>
        {Object.keys(current).length === 0 ? <p class="help">Every variable is at its default.</p> : null}
        <table class="list">
          <caption class="sr-only">Variables (sensitive values are masked)</caption>
          <thead><tr><th scope="col">Variable</th><th scope="col">Value</th></tr></thead>
          {groupFields(fields).map((sec) => (
            <tbody key={sec.id}>
              <tr class="section-row"><th scope="colgroup" colSpan={2}>{sec.title}</th></tr>
              {sec.fields.map((f) => {
                const set = f.name in current;
                const v = set ? current[f.name] : f.default;
                return (
                  <tr>
                    <td>{fieldLabel(f)} <code class="help small">{f.name}</code></td>
                    <td class="wrap">{f.sensitive && v !== undefined ? "(sensitive)" : valueText(v)}{set ? "" : <span class="help"> (default)</span>}</td>
                  </tr>
                );
              })}
            </tbody>
          ))}
        </table>
        <button type="button" class="secondary" disabled={c.state !== "ACTIVE"} onClick={() => setEdit(Object.fromEntries(fields.map((f) => [f.name, fromCurrent(f, current[f.name])])))}>
          Update variables
        </button>
      </div>
    );
  }
  const rules = checkRules(asRules(tpl.data.rules), fields, edit);
  const problems = (f: FieldModel) => [...validateField({ ...f, required: f.required && !f.sensitive }, edit[f.name]), ...(rules[f.path] ?? [])];
  const patch: Record<string, unknown> = {};
  for (const f of fields) {
    const v = toValue(f, edit[f.name]);
    if (f.sensitive && (v === undefined || v === "")) continue;
    const was = current[f.name];
    if (JSON.stringify(v) !== JSON.stringify(was === undefined ? f.default : was)) patch[f.name] = v === undefined ? null : v;
  }
  const body: UpdateBody = { variables: Object.keys(patch).length ? patch : null, template_version: version !== c.template.version ? version : null };
  const submit = async (e: Event) => {
    e.preventDefault();
    setProblem(null);
    const { data, error, response } = await api.PATCH("/v1/clusters/{id}", {
      params: { path: { id: c.id }, header: { "If-Match": `"${c.version}"`, "Idempotency-Key": idempotencyKey() } },
      body,
    });
    if (error || !data) {
      const p = asProblem(error, response);
      setApiErrs(mapFieldErrors(p.errors, fields.map((f) => f.path)).byPath);
      setProblem(p);
      return;
    }
    if ("operation" in data) onQueued(data.operation.id);
    else {
      setEdit(null);
      setProblem(null);
    }
  };
  const changed = Object.keys(patch).length > 0 || version !== c.template.version;
  return (
    <form onSubmit={submit} noValidate aria-label="Update variables">
      <div class="field">
        <label for="u-version">Template version</label>
        <select id="u-version" value={version} onChange={(e) => setVersion((e.target as HTMLSelectElement).value)}>
          {tpl.data.versions.map((v) => <option value={v}>{v}</option>)}
        </select>
      </div>
      {groupFields(fields).map((sec) => (
        <fieldset key={sec.id} class="section">
          <legend>{sec.title}</legend>
          {sec.fields.map((f) => (
            <VariableField key={f.path} idPrefix="u-" field={f} value={edit[f.name]} problems={problems(f)} apiErrors={apiErrs[f.path] ?? []}
              onChange={(v) => setEdit({ ...edit, [f.name]: v })} />
          ))}
        </fieldset>
      ))}
      <ProblemBox problem={problem ? (problem.status === 412 ? "Someone changed the cluster since you opened it; reload and try again." : problemText(problem)) : null} />
      <div class="actions">
        <button type="submit" disabled={!changed}>Apply changes{changed ? ` (${Object.keys(patch).map((k) => fieldLabel(fields.find((f) => f.name === k) ?? { name: k })).join(", ") || "template version"})` : ""}</button>
        {extraActions ? extraActions(body, changed) : null}
        <PreviewButton clusterId={c.id} disabled={!changed} onFieldErrors={(p) => setApiErrs(mapFieldErrors(p.errors, fields.map((f) => f.path)).byPath)}
          body={{ variables: Object.keys(patch).length ? patch : null, template_version: version !== c.template.version ? version : null }} />
        <button type="button" class="secondary" onClick={() => setEdit(null)}>Cancel</button>
      </div>
    </form>
  );
}

export function DriftSettings({ cluster: c, onSaved }: { cluster: Cluster; onSaved(): void }) {
  const [policy, setPolicy] = useState<"notify" | "reconcile">(c.drift.policy);
  const [hours, setHours] = useState(String(c.drift.interval_hours));
  const [problem, setProblem] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const n = Number(hours);
  const bad = !Number.isInteger(n) || n < 1 || n > 168 ? ["a whole number of hours, 1-168"] : [];
  const changed = policy !== c.drift.policy || n !== c.drift.interval_hours;
  const submit = async (e: Event) => {
    e.preventDefault();
    setProblem(null);
    setSaved(null);
    const { data, error, response } = await api.PATCH("/v1/clusters/{id}", {
      params: { path: { id: c.id }, header: { "If-Match": `"${c.version}"`, "Idempotency-Key": idempotencyKey() } },
      body: { drift: { policy, interval_hours: n } },
    });
    if (error || !data) setProblem(problemText(asProblem(error, response)));
    else {
      setSaved("Drift settings saved.");
      onSaved();
    }
  };
  return (
    <form onSubmit={submit} noValidate aria-label="Drift settings" class="row-fields">
      <div class="field">
        <label for="d-policy">When drift is found</label>
        <select id="d-policy" value={policy} onChange={(e) => setPolicy((e.target as HTMLSelectElement).value as "notify" | "reconcile")}>
          <option value="notify">notify</option>
          <option value="reconcile">reconcile (apply the spec again)</option>
        </select>
      </div>
      <div class={`field${bad.length ? " invalid" : ""}`}>
        <label for="d-hours">Hours between checks</label>
        <input id="d-hours" type="number" min={1} max={168} step={1} value={hours} onInput={(e) => setHours((e.target as HTMLInputElement).value)}
          aria-invalid={bad.length ? "true" : undefined} aria-describedby={bad.length ? "d-hours-err" : undefined} />
        {bad.length ? <ul class="field-errors" id="d-hours-err"><li>{bad[0]}</li></ul> : null}
      </div>
      <div class="field">
        <button type="submit" disabled={!changed || bad.length > 0}>Save drift settings</button>
        {saved ? <p role="status">{saved}</p> : null}
        <ProblemBox problem={problem} />
      </div>
    </form>
  );
}

// Fleet rollouts: the caller's rollouts (a tenant's own, GET /v1/rollouts; the platform operator's across
// tenants, GET /v1/admin/rollouts) and starting one — a preview that plans every selected cluster on the new
// version and applies nothing, or an apply in waves that pauses itself on what its stop rules do not allow.

import { useState } from "preact/hooks";
import { api, asProblem, idempotencyKey, problemText } from "../api/client";
import { badgeOf, EMPTY_ROLLOUT, type Rollout, type RolloutDraft, rolloutRequest } from "../rollouts";
import { messagesByField } from "../operator";
import { navigate } from "../router";
import { Link, PageTitle, ProblemBox, usePoll, ListHead } from "../ui";

/** The routes of the caller's kind: the operator's rollouts live under /v1/admin (same shapes). */
export function rolloutPaths(operator: boolean) {
  return {
    list: (operator ? "/v1/admin/rollouts" : "/v1/rollouts") as "/v1/rollouts",
    one: (operator ? "/v1/admin/rollouts/{id}" : "/v1/rollouts/{id}") as "/v1/rollouts/{id}",
    page: operator ? "/admin/rollouts" : "/rollouts",
  };
}

export function RolloutsPage({ operator }: { operator: boolean }) {
  const paths = rolloutPaths(operator);
  const { data, error } = usePoll(async (signal) => {
    const { data, error, response } = await api.GET(paths.list, { signal });
    if (error || !data) throw asProblem(error, response);
    return data;
  }, 10000, [operator]);
  return (
    <section>
      <PageTitle>Rollouts</PageTitle>
      <p class="help">
        A rollout moves a template's clusters to another version. A preview plans every selected cluster on that version and
        changes nothing; an apply upgrades them in waves and pauses itself, saying why, on a failure, a replacement or destroy
        it does not allow, a policy denial or a cost rise above its bound.
      </p>
      <ProblemBox problem={error} label="Could not read the rollouts" />
      {data && data.rollouts.length === 0 ? <p>No rollout yet.</p> : null}
      {data?.rollouts.length ? (
        <table class="list" data-testid="rollouts">
          <ListHead caption="Rollouts, newest first" columns={["Rollout", "Template", "Mode", "Phase", "Fleet", operator ? "Tenant" : null]} />
          <tbody>
            {data.rollouts.map((r: Rollout) => (
              <tr key={r.id}>
                <td><Link href={`${paths.page}/${encodeURIComponent(r.id)}`}>{r.id}</Link></td>
                <td class="nowrap">{r.template} → {r.to_version}</td>
                <td>{r.mode}</td>
                <td><span class={`badge badge-${badgeOf(r.phase)}`}>{r.phase}</span>{r.pause_reason ? <div class="reason">{r.pause_reason}</div> : null}</td>
                <td>{r.summary.text}</td>
                {operator ? <td>{r.tenant_id ?? "every tenant"}</td> : null}
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <NewRollout operator={operator} />
    </section>
  );
}

function NewRollout({ operator }: { operator: boolean }) {
  const paths = rolloutPaths(operator);
  const [draft, setDraft] = useState<RolloutDraft>(EMPTY_ROLLOUT);
  const [touched, setTouched] = useState(false);
  const [apiErrors, setApiErrors] = useState<Record<string, string[]>>({});
  const [problem, setProblem] = useState<string | null>(null);
  const { data: templates } = usePoll(async (signal) => {
    if (operator) return [];
    const { data } = await api.GET("/v1/templates", { signal });
    return data?.templates ?? [];
  }, 0, [operator]);
  const { body, errors } = rolloutRequest(draft, operator);
  const shown = (k: string) => [...(touched ? (errors[k] ?? []) : []), ...(apiErrors[k] ?? [])];
  const versions = templates?.find((t) => t.name === draft.template)?.versions ?? [];
  const submit = async (e: Event) => {
    e.preventDefault();
    setTouched(true);
    if (Object.keys(errors).length) return;
    setProblem(null);
    const { data, error, response } = await api.POST(paths.list, {
      body: body as never,
      params: { header: { "Idempotency-Key": idempotencyKey() } } as never,
    });
    if (error || !data) {
      const p = asProblem(error, response);
      setApiErrors(messagesByField(p.errors));
      setProblem(problemText(p));
      return;
    }
    navigate(`${paths.page}/${encodeURIComponent((data as Rollout).id)}`);
  };
  const text = (k: keyof RolloutDraft, label: string, help: string, apiField: string = k, list?: string) => {
    const id = `ro-${k}`;
    const bad = shown(apiField);
    return (
      <div class={`field${bad.length ? " invalid" : ""}`}>
        <label for={id}>{label}</label>
        <input type="text" id={id} list={list} value={draft[k] as string} aria-invalid={bad.length ? "true" : undefined} aria-describedby={`${id}-msg`}
          onInput={(e) => setDraft({ ...draft, [k]: (e.target as HTMLInputElement).value })} />
        <div id={`${id}-msg`} class="help">
          {help}
          {bad.map((m) => <div class="error" key={m}>{m}</div>)}
        </div>
      </div>
    );
  };
  return (
    <form onSubmit={submit} noValidate aria-label="Start a rollout" class="panel">
      <h2>Start a rollout</h2>
      {text("template", "Template", "The template whose clusters move, e.g. aws-eks-basic.", "template", "ro-templates")}
      <datalist id="ro-templates">{(templates ?? []).map((t) => <option value={t.name} key={t.name} />)}</datalist>
      {text("to_version", "To version", versions.length ? `Published: ${versions.join(", ")}.` : "A published version of the template.", "to_version", "ro-versions")}
      <datalist id="ro-versions">{versions.map((v) => <option value={v} key={v} />)}</datalist>
      {text("from_versions", "From versions", "Comma-separated; empty: every other version.", "selector")}
      {text("clusters", "Clusters", "Comma-separated names or ids; empty: the template's whole fleet.", "selector")}
      {operator ? text("tenants", "Tenants", "Comma-separated tenant ids; empty: every tenant.", "selector") : null}
      <fieldset class="field">
        <legend class="label">Mode</legend>
        <label><input type="radio" name="ro-mode" checked={draft.mode === "preview"} onChange={() => setDraft({ ...draft, mode: "preview" })} /> Preview: plan each cluster, change nothing</label>
        <br />
        <label><input type="radio" name="ro-mode" checked={draft.mode === "apply"} onChange={() => setDraft({ ...draft, mode: "apply" })} /> Apply in waves</label>
      </fieldset>
      {draft.mode === "apply" ? (
        <>
          {text("waves", "Waves", "Clusters (e.g. 1) or a cumulative percent of the fleet (e.g. 25%) per wave; the last 100%.")}
          {text("soak_minutes", "Soak (minutes)", "How long to wait after a wave before the next.", "soak_seconds")}
        </>
      ) : null}
      {/* In a preview too: the apply's rules, so the report counts the clusters that apply would hold. */}
      {text("allow_replace", "Replacements allowed", "Comma-separated addresses or prefixes whose replacement does not pause it.", "stop.allow_replace")}
      <div class="field field-bool">
        <input type="checkbox" id="ro-allow_destroy" checked={draft.allow_destroy} onChange={(e) => setDraft({ ...draft, allow_destroy: (e.target as HTMLInputElement).checked })} />
        <label for="ro-allow_destroy">Destroys allowed</label>
      </div>
      {text("max_monthly_delta", "Largest monthly cost rise (USD)", "A cluster whose estimate rises more pauses it; empty: no bound.", "stop.max_monthly_delta")}
      <ProblemBox problem={problem} />
      <div class="actions">
        <button type="submit">{draft.mode === "preview" ? "Preview" : "Start rollout"}</button>
      </div>
    </form>
  );
}

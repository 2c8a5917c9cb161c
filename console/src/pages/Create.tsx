// Create a cluster: a form generated from the template's variable schema, validated as the user types;
// "Estimate cost" sends the body to POST /v1/estimates (the API validates it exactly as a create, so every
// field error comes back at once, beside its field); the create is confirmed once the estimate is shown.

import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { api, asProblem, idempotencyKey, waitOperation, type Operation, type Problem, type Schemas, type TemplateDetail } from "../api/client";
import {
  asRules, buildVariables, checkRules, describeRule, fieldsFromTemplate, initialValue, mapFieldErrors, validateField, validateName,
  type FieldError, type RawValue,
} from "../form/schema";
import { FieldMessages, VariableField, describedBy } from "../form/Fields";
import { validateTtl } from "../form/lifetime";
import { createApproval, type ApprovalChoice } from "../approval";
import { navigate } from "../router";
import { PageTitle, ProblemBox, usePoll } from "../ui";
import { EstimateView } from "./Estimate";
import { catalogOf, regionLabel, withCatalog } from "../catalog/catalog";
import { groupFields } from "../form/sections";
import { fieldLabel, valueText } from "../form/words";
import { buildTarget, targetFields, targetPaths } from "../target/target";
import { TargetSection } from "./TargetSection";

type CloudProvider = TemplateDetail["providers"][number];

const TOP_LABELS: Record<string, string> = { name: "Cluster name", provider: "Provider", region: "Region", template: "Template", ttl_hours: "Delete after", expires_at: "Delete after", approval: "Approval of plans" };

export function CreatePage() {
  const templates = usePoll(async (signal) => {
    const { data, error, response } = await api.GET("/v1/templates", { signal });
    if (error || !data) throw asProblem(error, response);
    return data.templates;
  }, 0, []);
  const [tname, setTname] = useState("");
  const [tversion, setTversion] = useState("");
  useEffect(() => {
    const list = templates.data;
    if (list?.length && !tname) {
      const t = list.find((x) => x.name === "aws-eks-basic") ?? list[0];
      setTname(t.name);
      setTversion(t.version);
    }
  }, [templates.data]);
  const detail = usePoll(
    async (signal) => {
      if (!tname) return null;
      const { data, error, response } = await api.GET("/v1/templates/{name}", {
        params: { path: { name: tname }, query: tversion ? { version: tversion } : {} },
        signal,
      });
      if (error || !data) throw asProblem(error, response);
      return data;
    },
    0,
    [tname, tversion],
  );
  const summary = templates.data?.find((t) => t.name === tname);
  return (
    <section>
      <PageTitle>New cluster</PageTitle>
      <ProblemBox problem={templates.error} label="Could not list templates" />
      <div class="row-fields">
        <div class="field">
          <label for="template">Template</label>
          <select id="template" value={tname} onChange={(e) => { const n = (e.target as HTMLSelectElement).value; setTname(n); setTversion(templates.data?.find((t) => t.name === n)?.version ?? ""); }}>
            {(templates.data ?? []).map((t) => (
              <option value={t.name}>{t.name}</option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="template-version">Template version</label>
          <select id="template-version" value={tversion} onChange={(e) => setTversion((e.target as HTMLSelectElement).value)}>
            {(summary?.versions ?? []).map((v) => (
              <option value={v}>{v}</option>
            ))}
          </select>
        </div>
      </div>
      {summary ? <p class="help">{summary.description}</p> : null}
      <ProblemBox problem={detail.error} label="Could not read the template" />
      {detail.data ? <CreateForm key={`${detail.data.name}@${detail.data.version}`} t={detail.data} /> : templates.data ? <p>Loading the template…</p> : null}
    </section>
  );
}

function CreateForm({ t }: { t: TemplateDetail }) {
  const [provider, setProvider] = useState<CloudProvider>(t.providers[0]);
  const fields = useMemo(() => withCatalog(fieldsFromTemplate(t, provider), provider), [t, provider]);
  const sections = useMemo(() => groupFields(fields), [fields]);
  const regions = catalogOf(provider)?.regions ?? [];
  const rules = useMemo(() => asRules(t.rules), [t]);
  const [name, setName] = useState("");
  const [region, setRegion] = useState(t.defaults[provider]?.region ?? "");
  // Optional lifetime: the scheduler deletes the cluster once it is over (the tenant may cap it).
  const [ttl, setTtl] = useState("");
  // Optional approval mode: "" leaves it to the template's and tenant's (the strictest of the three applies).
  const [approval, setApproval] = useState<ApprovalChoice>("");
  // The target's typed values by member; only the chosen cloud's reach the request (see buildTarget).
  const [targetValues, setTargetValues] = useState<Record<string, string>>({});
  const access = usePoll(async (signal) => {
    const { data } = await api.GET("/v1/tenant/target-access", { signal });
    return data ?? null;
  }, 0, []);
  const [values, setValues] = useState<Record<string, RawValue>>(() => Object.fromEntries(fields.map((f) => [f.name, initialValue(f)])));
  const [touched, setTouched] = useState<Set<string>>(new Set());
  const [apiErrs, setApiErrs] = useState<Record<string, FieldError[]>>({});
  const [unmatched, setUnmatched] = useState<FieldError[]>([]);
  const [problem, setProblem] = useState<Problem | string | null>(null);
  const [estimating, setEstimating] = useState<Operation | null>(null);
  const [estimate, setEstimate] = useState<{ body: string; op: Operation } | null>(null);
  const [creating, setCreating] = useState(false);
  const idem = useRef<{ body: string; key: string } | null>(null);
  const stop = useRef<AbortController | null>(null);
  useEffect(() => () => stop.current?.abort(), []);

  const touch = (p: string) => setTouched((s) => (s.has(p) ? s : new Set(s).add(p)));
  const clearApi = (p: string) => setApiErrs((e) => (e[p] ? { ...e, [p]: [] } : e));
  const variables = buildVariables(fields, values);
  const target = buildTarget(provider, targetValues) as Schemas["TargetRequest"] | undefined;
  const body = { name, template: { name: t.name, version: t.version }, provider, region, variables, ...(target ? { target } : {}) };
  const bodyJson = JSON.stringify(body);
  // The lifetime and approval do not change the estimate, but a create with another one is another request.
  const createJson = JSON.stringify({ ...body, ttl, approval });
  const ruleErrs = checkRules(rules, fields, values);
  const clientErrs: Record<string, string[]> = { name: validateName(name), region: region ? [] : ["required"], ttl_hours: validateTtl(ttl) };
  for (const f of fields) clientErrs[f.path] = [...validateField(f, values[f.name]), ...(ruleErrs[f.path] ?? [])];
  const shown = (p: string) => (touched.has(p) ? clientErrs[p] ?? [] : []);
  const paths = ["name", "provider", "region", "template", "ttl_hours", "expires_at", "approval", ...targetPaths(provider), ...fields.map((f) => f.path)];
  const targetLabel = (k: string) => (k.startsWith("target.") ? targetFields(provider).find((f) => `target.${f.name}` === k)?.label : k === "target" ? "Target" : undefined);

  const showApiErrors = (p: Problem) => {
    const { byPath, unmatched } = mapFieldErrors(p.errors, paths);
    setApiErrs(byPath);
    setUnmatched(unmatched);
    // With field errors, the box names the fields to fix (each says why beside itself), not the errors again.
    const bad = Object.keys(byPath).filter((k) => byPath[k].length).map((k) => (k.startsWith("variables.") ? fieldLabel(fields.find((f) => f.path === k) ?? { name: k.slice(10) }) : TOP_LABELS[k] ?? targetLabel(k) ?? k));
    setProblem(p.errors?.length ? (bad.length ? `fix ${bad.join(", ")} (marked below)${unmatched.length ? " and the problems listed here" : ""}.` : `${p.title}: ${p.detail}`) : p);
    setTouched(new Set(paths));
    const first = paths.find((x) => byPath[x]?.length);
    if (first) requestAnimationFrame(() => document.getElementById(first.startsWith("variables.") ? `v-${first.replace(/[^a-zA-Z0-9_-]/g, "-")}` : `c-${first}`)?.focus());
  };

  const runEstimate = async (e: Event) => {
    e.preventDefault();
    setProblem(null);
    setUnmatched([]);
    setApiErrs({});
    setEstimate(null);
    stop.current?.abort();
    const ctl = (stop.current = new AbortController());
    const sent = bodyJson;
    const { data, error, response } = await api.POST("/v1/estimates", { body: { ...body, name: name || null }, signal: ctl.signal });
    if (error || !data) return showApiErrors(asProblem(error, response));
    setEstimating(data.operation);
    try {
      const op = await waitOperation(data.operation.id, ctl.signal, 1000);
      setEstimate({ body: sent, op });
    } catch (err) {
      if (!ctl.signal.aborted) setProblem((err as Error).message);
    } finally {
      setEstimating(null);
    }
  };

  const create = async () => {
    setCreating(true);
    setProblem(null);
    if (idem.current?.body !== createJson) idem.current = { body: createJson, key: idempotencyKey() };
    const lifetime = ttl.trim() ? { ttl_hours: Number(ttl) } : {};
    const { data, error, response } = await api.POST("/v1/clusters", { body: { ...body, ...lifetime, ...createApproval(approval) }, params: { header: { "Idempotency-Key": idem.current.key } } });
    setCreating(false);
    if (error || !data) return showApiErrors(asProblem(error, response));
    navigate(`/operations/${encodeURIComponent(data.operation.id)}`);
  };

  const top = (id: string, label: string, value: string, set: (v: string) => void, help: string, extra: Record<string, unknown> = {}) => {
    const p = id;
    const probs = shown(p);
    const ae = apiErrs[p] ?? [];
    const fid = `c-${id}`;
    return (
      <div class={`field${probs.length + ae.length ? " invalid" : ""}`}>
        <label for={fid}>{label}</label>
        <input
          id={fid}
          type="text"
          required
          value={value}
          onInput={(e) => { set((e.target as HTMLInputElement).value); touch(p); clearApi(p); }}
          aria-invalid={probs.length + ae.length ? "true" : undefined}
          aria-describedby={describedBy(fid, true, probs.length + ae.length > 0)}
          {...extra}
        />
        <FieldMessages id={fid} description={help} problems={probs} apiErrors={ae} />
      </div>
    );
  };

  const estimateCurrent = estimate && estimate.body === bodyJson;
  return (
    <form onSubmit={runEstimate} noValidate aria-label="Create cluster" class="create-grid">
      <div>
      <fieldset>
        <legend>Cluster</legend>
      {top("name", "Cluster name", name, setName, "3-40 characters of a-z, 0-9 and '-', starting with a letter and not ending with '-'.", { autoComplete: "off" })}
      <div class="field">
        <label for="c-provider">Provider</label>
        <select id="c-provider" value={provider} onChange={(e) => { const p = (e.target as HTMLSelectElement).value as CloudProvider; setProvider(p); setRegion(t.defaults[p]?.region ?? ""); }}>
          {t.providers.map((p) => (
            <option value={p}>{p}</option>
          ))}
        </select>
        <FieldMessages id="c-provider" problems={[]} apiErrors={apiErrs["provider"] ?? []} />
      </div>
      {regions.length ? (
        <div class={`field${shown("region").length + (apiErrs["region"]?.length ?? 0) ? " invalid" : ""}`}>
          <label for="c-region">Region</label>
          <select id="c-region" value={region} aria-describedby={describedBy("c-region", true, shown("region").length + (apiErrs["region"]?.length ?? 0) > 0)}
            onChange={(e) => { setRegion((e.target as HTMLSelectElement).value); touch("region"); clearApi("region"); }}>
            {region && !regions.some((r) => r.id === region) ? <option value={region}>{region} (not in the catalog)</option> : null}
            {regions.map((r) => <option value={r.id}>{regionLabel(r)}</option>)}
          </select>
          <FieldMessages id="c-region" description={`Where the cluster runs${t.defaults[provider]?.region ? ` (the template's default is ${t.defaults[provider]?.region})` : ""}.`} problems={shown("region")} apiErrors={apiErrs["region"] ?? []} />
        </div>
      ) : top("region", "Region", region, setRegion, `A region of ${provider}${t.defaults[provider]?.region ? ` (default ${t.defaults[provider]?.region})` : ""}.`)}
      </fieldset>
      <TargetSection
        provider={provider}
        values={targetValues}
        onChange={(k, v) => { setTargetValues((s) => ({ ...s, [k]: v })); clearApi(`target.${k}`); clearApi("target"); }}
        apiErrs={apiErrs}
        externalId={access.data?.external_id}
      />
      {sections.map((sec) => (
        <fieldset key={sec.id} class="section">
          <legend>{sec.title}</legend>
          {sec.help ? <p class="help">{sec.help}</p> : null}
          {sec.fields.map((f) => (
            <VariableField
              key={f.path}
              field={f}
              value={values[f.name]}
              onChange={(v) => { setValues((s) => ({ ...s, [f.name]: v })); touch(f.path); clearApi(f.path); }}
              problems={shown(f.path)}
              apiErrors={apiErrs[f.path] ?? []}
            />
          ))}
        </fieldset>
      ))}
      {rules.length ? (
        <div class="help">
          Also checked: <ul>{rules.map((r) => <li>{describeRule(r)}</li>)}</ul>
        </div>
      ) : null}
      <fieldset>
        <legend>Lifetime and approval</legend>
      {top("ttl_hours", "Delete after (hours, optional)", ttl, setTtl, "Leave empty to keep the cluster until you delete it (unless your tenant sets a maximum lifetime); Strato deletes it once this many hours have passed and notifies your webhook a day before.", { required: false, inputMode: "numeric" })}
      <div class={`field${apiErrs["approval"]?.length ? " invalid" : ""}`}>
        <label for="c-approval">Approval of plans</label>
        <select id="c-approval" data-testid="create-approval" value={approval} aria-describedby={describedBy("c-approval", true, !!apiErrs["approval"]?.length)}
          onChange={(e) => { setApproval((e.target as HTMLSelectElement).value as ApprovalChoice); clearApi("approval"); }}>
          <option value="">template/tenant default</option>
          <option value="required">required: an approver approves each plan first</option>
          <option value="auto">auto: apply at once (unless the template or tenant requires approval)</option>
        </select>
        <FieldMessages id="c-approval" description="With required, the create and every update wait after their plan (nothing applied) until someone with the operations:approve scope approves it." problems={[]} apiErrors={apiErrs["approval"] ?? []} />
      </div>
      </fieldset>
      </div>
      <div class="aside">
      <section class="summary" aria-labelledby="summary-h">
        <h2 id="summary-h">Summary</h2>
        <dl class="facts">
          <dt>Name</dt><dd>{name || "—"}</dd>
          <dt>Template</dt><dd>{t.name}@{t.version}</dd>
          <dt>Where</dt><dd>{provider} / {region || "—"}</dd>
          {target ? <><dt>Target</dt><dd class="wrap">{Object.entries(target).filter(([k]) => k !== "provider").map(([k, v]) => `${k}: ${v}`).join(", ") || "your registered token"}</dd></> : null}
          {Object.entries(variables).map(([k, v]) => (
            <><dt>{fieldLabel(fields.find((f) => f.name === k) ?? { name: k })}</dt><dd class="wrap">{fields.find((f) => f.name === k)?.sensitive ? "(set; hidden)" : valueText(v)}</dd></>
          ))}
        </dl>
        {Object.keys(variables).length ? null : <p class="help">Every variable at its default.</p>}
      </section>
      {unmatched.length ? (
        <ul class="field-errors" role="alert">
          {unmatched.map((e) => (
            <li><code>{e.field}</code>: {e.problem}{e.allowed ? ` — allowed: ${e.allowed}` : ""}</li>
          ))}
        </ul>
      ) : null}
      <ProblemBox problem={problem} label="The request was refused" />
      <div class="actions">
        <button type="submit" disabled={!!estimating}>
          {estimating ? "Estimating…" : estimateCurrent ? "Estimate again" : "Estimate cost"}
        </button>
        <button type="button" class="secondary" onClick={() => { stop.current?.abort(); navigate("/clusters"); }}>
          Cancel
        </button>
      </div>
      <div aria-live="polite">
        {estimating ? <p>Estimating the monthly cost (operation {estimating.id})…</p> : null}
      </div>
      {estimate && estimateCurrent ? (
        <section class="estimate" aria-labelledby="estimate-h">
          <h2 id="estimate-h">Cost estimate</h2>
          {estimate.op.status === "succeeded" && estimate.op.estimate ? (
            <EstimateView e={estimate.op.estimate} />
          ) : (
            <ProblemBox problem={estimate.op.error ? `${estimate.op.error.what} (step ${estimate.op.error.step}). ${estimate.op.error.fix}` : `The estimate ${estimate.op.status}.`} label="No estimate" />
          )}
          <p>
            <button type="button" onClick={create} disabled={creating}>
              {creating ? "Creating…" : `Create cluster ${name}`}
            </button>
          </p>
        </section>
      ) : estimate ? (
        <p role="status">The form changed since the estimate; estimate again to create.</p>
      ) : null}
      </div>
    </form>
  );
}

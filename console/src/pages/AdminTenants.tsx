// The platform operator's tenants: GET /v1/admin/tenants (settings and usage, paged) and registering one
// (POST /v1/admin/tenants). Only an operator's token passes the API; a tenant's gets its 403, shown as is.

import { useState } from "preact/hooks";
import { api, asProblem, problemText } from "../api/client";
import { type AdminTenant, budgetText, EMPTY_DRAFT, lifetimeText, tenantChange, usage, validateTenantId, messagesByField } from "../operator";
import { Link, PageTitle, ProblemBox, usePoll, ListHead } from "../ui";
import { TenantFields } from "./TenantFields";
import { navigate } from "../router";

const PAGE = 50;

function Usage({ used, max, what }: { used: number; max: number; what: string }) {
  const u = usage(used, max);
  return (
    <span title={`${u.text} ${what}`}>
      <meter min={0} max={1} low={0.7} high={0.9} optimum={0} value={u.ratio} aria-hidden="true" /> {u.text}
    </span>
  );
}

export function AdminTenantsPage() {
  const [more, setMore] = useState<AdminTenant[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const { data, error } = usePoll(async (signal) => {
    const { data, error, response } = await api.GET("/v1/admin/tenants", { params: { query: { limit: PAGE } }, signal });
    if (error || !data) throw asProblem(error, response);
    return data;
  }, 15000, []);
  const rows = [...(data?.tenants ?? []), ...more];
  const cursor = more.length ? next : (data?.next ?? null);
  const loadMore = async () => {
    if (!cursor) return;
    const { data: page } = await api.GET("/v1/admin/tenants", { params: { query: { limit: PAGE, next: cursor } } });
    if (page) {
      setMore((m) => [...m, ...page.tenants]);
      setNext(page.next ?? null);
    }
  };
  return (
    <section>
      <PageTitle>Tenants</PageTitle>
      <ProblemBox problem={error} label="Could not read the tenants" />
      {data && rows.length === 0 ? <p>No tenant is registered yet.</p> : null}
      {rows.length ? (
        <table class="list" data-testid="tenants">
          <ListHead caption="Tenants with their quotas, budget and defaults" columns={["Tenant", "Clusters", "Open operations", "At once", "Budget", "Approval", "Longest lifetime", "Status"]} />
          <tbody>
            {rows.map((t) => (
              <tr key={t.id}>
                <td><Link href={`/admin/tenants/${encodeURIComponent(t.id)}`}>{t.id}</Link></td>
                <td><Usage used={t.cluster_count} max={t.max_clusters} what="clusters" /></td>
                <td><Usage used={t.open_operations} max={t.max_open_operations} what="open operations" /></td>
                <td>{t.max_concurrent_operations}</td>
                <td class="nowrap">{budgetText(t.monthly_budget)}</td>
                <td>{t.approval ?? "auto"}</td>
                <td>{lifetimeText(t.max_ttl_hours)}</td>
                <td>
                  {t.suspended ? <span class="badge badge-failed">Suspended</span> : <span class="badge badge-active">Active</span>}
                  {t.suspended && t.suspended_reason ? <div class="reason">{t.suspended_reason}</div> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {cursor ? <button type="button" class="secondary" onClick={loadMore}>Load more</button> : null}
      <NewTenant />
    </section>
  );
}

function NewTenant() {
  const [id, setId] = useState("");
  const [draft, setDraft] = useState(EMPTY_DRAFT);
  const [apiErrors, setApiErrors] = useState<Record<string, string[]>>({});
  const [problem, setProblem] = useState<string | null>(null);
  const [touched, setTouched] = useState(false);
  const { body, errors } = tenantChange(null, draft);
  const idErrors = touched ? validateTenantId(id) : [];
  const submit = async (e: Event) => {
    e.preventDefault();
    setTouched(true);
    if (validateTenantId(id).length || Object.keys(errors).length) return;
    setProblem(null);
    const { data, error, response } = await api.POST("/v1/admin/tenants", { body: { ...body, id } as never });
    if (error || !data) {
      const p = asProblem(error, response);
      setApiErrors(messagesByField(p.errors));
      setProblem(problemText(p));
      return;
    }
    navigate(`/admin/tenants/${encodeURIComponent(data.id)}`);
  };
  return (
    <form onSubmit={submit} noValidate aria-label="Register a tenant" class="panel">
      <h2>Register a tenant</h2>
      <p class="help">
        Its tokens carry this id. Settings left empty take the platform's defaults; each can be changed later. Registering an
        id that exists applies the settings given to it.
      </p>
      <div class={`field${idErrors.length || apiErrors.id ? " invalid" : ""}`}>
        <label for="tenant-id">Tenant id</label>
        <input type="text" id="tenant-id" value={id} required aria-invalid={idErrors.length ? "true" : undefined} aria-describedby="tenant-id-msg"
          onInput={(e) => setId((e.target as HTMLInputElement).value.trim())} onBlur={() => setTouched(true)} />
        <div id="tenant-id-msg" class="help">
          {[...idErrors, ...(apiErrors.id ?? [])].map((m) => <div class="error" key={m}>{m}</div>)}
        </div>
      </div>
      <TenantFields prefix="new" draft={draft} errors={errors} apiErrors={apiErrors} onChange={setDraft} />
      <ProblemBox problem={problem} />
      <div class="actions">
        <button type="submit">Register tenant</button>
      </div>
    </form>
  );
}

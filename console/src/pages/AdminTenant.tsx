// One tenant as the platform operator manages it: usage, settings (PATCH /v1/admin/tenants/{tenant}, only
// what changed), suspend with a reason / resume behind a confirmation, and its audit log, where the
// operator's own actions are recorded under the operator's sub.

import { useEffect, useState } from "preact/hooks";
import { api, asProblem, problemText } from "../api/client";
import { actionText, actorText, outcomeText, reasonText } from "../audit";
import { ConfirmDialog } from "../dialog";
import { type AdminTenant, budgetText, draftOf, EMPTY_DRAFT, lifetimeText, tenantChange, usage, messagesByField } from "../operator";
import { Link, PageTitle, ProblemBox, StateBadge, usePoll, when, ListHead } from "../ui";
import { TenantFields } from "./TenantFields";

export function AdminTenantPage({ id }: { id: string }) {
  const { data, error, setData } = usePoll(async (signal) => {
    const { data, error, response } = await api.GET("/v1/admin/tenants/{tenant}", { params: { path: { tenant: id } }, signal });
    if (error || !data) throw asProblem(error, response);
    return data;
  }, 15000, [id]);
  return (
    <section>
      <p><Link href="/admin/tenants">← Tenants</Link></p>
      <PageTitle>Tenant {id}</PageTitle>
      <ProblemBox problem={error} label="Could not read the tenant" />
      {data ? (
        <>
          <dl class="facts">
            <dt>Status</dt>
            <dd data-testid="tenant-status">
              {data.suspended ? <span class="badge badge-failed">Suspended</span> : <span class="badge badge-active">Active</span>}
              {data.suspended && data.suspended_reason ? <> — {data.suspended_reason}</> : null}
            </dd>
            <dt>Clusters</dt>
            <dd>{usage(data.cluster_count, data.max_clusters).text}</dd>
            <dt>Open operations</dt>
            <dd>{usage(data.open_operations, data.max_open_operations).text}</dd>
            <dt>Budget</dt>
            <dd>{budgetText(data.monthly_budget)}</dd>
            <dt>Longest lifetime</dt>
            <dd>{lifetimeText(data.max_ttl_hours)}</dd>
            <dt>Registered</dt>
            <dd>{data.created_at ? when(data.created_at) : "never by an operator (known from its tokens)"}</dd>
          </dl>
          <Settings tenant={data} onSaved={(t) => setData(t)} />
          <Suspension tenant={data} onDone={(t) => setData(t)} />
          <p><Link href={`/admin/clusters?tenant=${encodeURIComponent(id)}`}>Its clusters</Link></p>
        </>
      ) : null}
      <TenantAudit id={id} refresh={data} />
    </section>
  );
}

function Settings({ tenant, onSaved }: { tenant: AdminTenant; onSaved(t: AdminTenant): void }) {
  const [draft, setDraft] = useState(EMPTY_DRAFT);
  const [apiErrors, setApiErrors] = useState<Record<string, string[]>>({});
  const [problem, setProblem] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  // The form starts from the tenant as read; a later poll does not overwrite what is being typed.
  useEffect(() => setDraft(draftOf(tenant)), [tenant.id]);
  const { body, errors } = tenantChange(tenant, draft);
  const changed = Object.keys(body);
  const save = async (e: Event) => {
    e.preventDefault();
    if (Object.keys(errors).length || !changed.length) return;
    setProblem(null);
    setSaved(null);
    const { data, error, response } = await api.PATCH("/v1/admin/tenants/{tenant}", {
      params: { path: { tenant: tenant.id } },
      body: body as never,
    });
    if (error || !data) {
      const p = asProblem(error, response);
      setApiErrors(messagesByField(p.errors));
      setProblem(problemText(p));
      return;
    }
    setApiErrors({});
    setDraft(draftOf(data));
    setSaved(`Saved: ${changed.join(", ").replace(/_/g, " ")}.`);
    onSaved(data);
  };
  return (
    <form onSubmit={save} noValidate aria-label="Tenant settings" class="panel">
      <h2>Settings</h2>
      <TenantFields prefix="t" draft={draft} errors={errors} apiErrors={apiErrors} onChange={(d) => { setDraft(d); setSaved(null); }} />
      <ProblemBox problem={problem} />
      {saved ? <p role="status">{saved}</p> : null}
      <div class="actions">
        <button type="submit" disabled={!changed.length || Object.keys(errors).length > 0}>Save settings</button>
        <button type="button" class="secondary" disabled={!changed.length} onClick={() => setDraft(draftOf(tenant))}>Undo changes</button>
      </div>
    </form>
  );
}

function Suspension({ tenant, onDone }: { tenant: AdminTenant; onDone(t: AdminTenant): void }) {
  const [reason, setReason] = useState("");
  const [confirm, setConfirm] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const send = async (body: { suspended: boolean; reason?: string }) => {
    setProblem(null);
    const { data, error, response } = await api.PATCH("/v1/admin/tenants/{tenant}", { params: { path: { tenant: tenant.id } }, body: body as never });
    if (error || !data) return setProblem(problemText(asProblem(error, response)));
    setReason("");
    onDone(data);
  };
  return (
    <div class="panel">
      <h2>Suspension</h2>
      {tenant.suspended ? (
        <>
          <p>Its changes are refused with this reason; its reads keep working.</p>
          <button type="button" onClick={() => setConfirm(true)}>Resume tenant</button>
        </>
      ) : (
        <form noValidate aria-label="Suspend the tenant" onSubmit={(e) => { e.preventDefault(); if (reason.trim()) setConfirm(true); }}>
          <div class="field">
            <label for="suspend-reason">Reason</label>
            <input type="text" id="suspend-reason" value={reason} aria-describedby="suspend-reason-msg" onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
            <div id="suspend-reason-msg" class="help">Shown to its users in every refusal, e.g. "invoice overdue: contact billing".</div>
          </div>
          <button type="submit" class="danger" disabled={!reason.trim()}>Suspend tenant…</button>
        </form>
      )}
      <ProblemBox problem={problem} />
      {confirm ? (
        <ConfirmDialog
          title={tenant.suspended ? `Resume ${tenant.id}?` : `Suspend ${tenant.id}?`}
          confirmLabel={tenant.suspended ? "Resume tenant" : "Suspend tenant"}
          danger={!tenant.suspended}
          onClose={() => setConfirm(false)}
          onConfirm={() => send(tenant.suspended ? { suspended: false } : { suspended: true, reason: reason.trim() })}
        >
          {tenant.suspended ? (
            <p>Its users can create, change and delete clusters again.</p>
          ) : (
            <p>Its users' creates, updates and deletes are refused with “{reason.trim()}” until it is resumed. Running operations finish.</p>
          )}
        </ConfirmDialog>
      ) : null}
    </div>
  );
}

function TenantAudit({ id, refresh }: { id: string; refresh: unknown }) {
  const { data, error } = usePoll(async (signal) => {
    const { data, error, response } = await api.GET("/v1/admin/tenants/{tenant}/audit", {
      params: { path: { tenant: id }, query: { limit: 20 } },
      signal,
    });
    if (error || !data) throw asProblem(error, response);
    return data;
  }, 15000, [id, refresh]);
  return (
    <div class="panel">
      <h2>Recent audit entries</h2>
      <ProblemBox problem={error} label="Could not read its audit log" />
      {data && data.entries.length === 0 ? <p>No entries.</p> : null}
      {data?.entries.length ? (
        <table class="list" data-testid="tenant-audit">
          <ListHead caption="The tenant's latest audit entries, newest first" columns={["Time", "Who", "What", "Outcome"]} />
          <tbody>
            {data.entries.map((e) => {
              const why = reasonText(e);
              return (
                <tr key={`${e.time}-${e.request_id ?? ""}-${e.action}`}>
                  <td class="nowrap">{when(e.time)}</td>
                  <td class="nowrap">{actorText(e.actor)}</td>
                  <td title={e.action}>{actionText(e.action)}</td>
                  <td>
                    <StateBadge state={e.outcome} />
                    <span class="sr-only"> ({outcomeText(e)})</span>
                    {why ? <div class="reason">{why}</div> : null}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}

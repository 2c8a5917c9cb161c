// Operations across tenants, read-only (GET /v1/admin/operations): filters by tenant, cluster, kind and
// status — where the platform team looks when a tenant says "my cluster is stuck": what failed, at which
// step and why, or why a queued operation waits. Each page reads at most `limit` operations and filters what
// it read, so a page can be short and still have more behind it.

import { useState } from "preact/hooks";
import { api, asProblem, type Schemas } from "../api/client";
import { Link, PageTitle, ProblemBox, when, ListHead } from "../ui";
import { usePagedList } from "./paged";
import { KINDS, STATUSES, operationFiltersFrom, why, type OperationFilters } from "./adminOperations";

type Row = Schemas["AdminOperation"];
const PAGE = 100;

function query(f: OperationFilters, next?: string) {
  return {
    limit: PAGE,
    ...(f.tenant ? { tenant: f.tenant } : {}),
    ...(f.cluster ? { cluster: f.cluster } : {}),
    ...(f.kind ? { kind: f.kind } : {}),
    ...(f.status ? { status: f.status } : {}),
    ...(next ? { next } : {}),
  };
}

export function AdminOperationsPage() {
  const initial = operationFiltersFrom(location.search);
  const [draft, setDraft] = useState<OperationFilters>(initial);
  const [filters, setFilters] = useState<OperationFilters>(initial);
  const list = usePagedList<Row>(
    async (next, signal) => {
      const { data, error, response } = await api.GET("/v1/admin/operations", { params: { query: query(filters, next) }, signal });
      if (error || !data) throw asProblem(error, response);
      return { rows: data.operations, next: data.next };
    },
    15000,
    [filters.tenant, filters.cluster, filters.kind, filters.status],
  );
  const { rows, cursor } = list;
  const text = (id: "tenant" | "cluster", label: string, placeholder: string) => (
    <label>
      {label}{" "}
      <input value={draft[id]} placeholder={placeholder} onInput={(e) => setDraft({ ...draft, [id]: (e.target as HTMLInputElement).value.trim() })} />
    </label>
  );
  const choice = <K extends "kind" | "status">(id: K, label: string, values: string[]) => (
    <label>
      {label}{" "}
      <select value={draft[id]} onChange={(e) => setDraft({ ...draft, [id]: (e.target as HTMLSelectElement).value as OperationFilters[K] })}>
        <option value="">any</option>
        {values.map((v) => <option value={v} key={v}>{v.replace("_", " ")}</option>)}
      </select>
    </label>
  );
  return (
    <section>
      <PageTitle>Operations of every tenant</PageTitle>
      <form
        class="toolbar"
        aria-label="Operation filters"
        onSubmit={(e) => {
          e.preventDefault();
          list.reset();
          setFilters(draft);
        }}
      >
        {text("tenant", "Tenant", "any")}
        {text("cluster", "Cluster", "cl-…")}
        {choice("kind", "Kind", KINDS)}
        {choice("status", "Status", STATUSES)}
        <button type="submit" class="secondary">Filter</button>
      </form>
      <ProblemBox problem={list.error} label="Could not read the operations" />
      {list.loaded && rows.length === 0 ? <p>{cursor ? "None in what was read so far." : "No operation matches."}</p> : null}
      {rows.length ? (
        <table class="list" data-testid="admin-operations">
          <ListHead caption="Operations across tenants" columns={["Operation", "Tenant", "Status", "Step", "Why", "Changed"]} />
          <tbody>
            {rows.map((o) => (
              <tr key={o.id}>
                <td>
                  {o.kind}
                  {o.attempt > 1 ? ` (attempt ${o.attempt})` : ""}
                  <div class="help"><code class="small">{o.id}</code></div>
                  <div class="help">cluster <code class="small">{o.cluster_id}</code></div>
                </td>
                <td><Link href={`/admin/tenants/${encodeURIComponent(o.tenant)}`}>{o.tenant}</Link></td>
                <td class="nowrap">{o.status.replace("_", " ")}</td>
                <td class="nowrap">{o.current_step ?? "—"}</td>
                <td>{why(o) || "—"}</td>
                <td class="nowrap">{when(o.updated_at)}{o.requested_by ? <div class="help">by {o.requested_by}</div> : null}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {cursor ? <button type="button" class="secondary" onClick={list.loadMore}>Load more</button> : null}
    </section>
  );
}

// Clusters across tenants, read-only (GET /v1/admin/clusters): filters by tenant, state, template and
// version. Each page reads at most `limit` clusters and filters what it read, so a page can be short — even
// empty — and still have more behind it: "Load more" says so instead of guessing.

import { useState } from "preact/hooks";
import { api, asProblem, type ClusterState, type Schemas } from "../api/client";
import { Link, PageTitle, ProblemBox, StateBadge, when, ListHead } from "../ui";
import { usePagedList } from "./paged";

type Row = Schemas["AdminCluster"];
type Filters = { tenant: string; state: "" | ClusterState; template: string; version: string };

const STATES: ClusterState[] = ["PENDING", "PROVISIONING", "CONFIGURING", "ACTIVE", "UPDATING", "DELETING", "DELETED", "FAILED"];
const PAGE = 100;

function query(f: Filters, next?: string) {
  return {
    limit: PAGE,
    ...(f.tenant ? { tenant: f.tenant } : {}),
    ...(f.state ? { state: f.state } : {}),
    ...(f.template ? { template: f.template } : {}),
    ...(f.version ? { version: f.version } : {}),
    ...(next ? { next } : {}),
  };
}

/** The filters a link may carry (`/admin/clusters?tenant=acme`). */
export function filtersFrom(search: string): Filters {
  const q = new URLSearchParams(search);
  const state = (q.get("state") ?? "").toUpperCase();
  return {
    tenant: q.get("tenant") ?? "",
    state: (STATES as string[]).includes(state) ? (state as ClusterState) : "",
    template: q.get("template") ?? "",
    version: q.get("version") ?? "",
  };
}

export function AdminClustersPage() {
  const initial = filtersFrom(location.search);
  const [draft, setDraft] = useState<Filters>(initial);
  const [filters, setFilters] = useState<Filters>(initial);
  const list = usePagedList<Row>(
    async (next, signal) => {
      const { data, error, response } = await api.GET("/v1/admin/clusters", { params: { query: query(filters, next) }, signal });
      if (error || !data) throw asProblem(error, response);
      return { rows: data.clusters, next: data.next };
    },
    15000,
    [filters.tenant, filters.state, filters.template, filters.version],
  );
  const { rows, cursor } = list;
  const text = (id: "tenant" | "template" | "version", label: string, placeholder: string) => (
    <label>
      {label}{" "}
      <input value={draft[id]} placeholder={placeholder} onInput={(e) => setDraft({ ...draft, [id]: (e.target as HTMLInputElement).value.trim() })} />
    </label>
  );
  return (
    <section>
      <PageTitle>Clusters of every tenant</PageTitle>
      <form
        class="toolbar"
        aria-label="Cluster filters"
        onSubmit={(e) => {
          e.preventDefault();
          list.reset();
          setFilters(draft);
        }}
      >
        {text("tenant", "Tenant", "any")}
        <label>
          State{" "}
          <select value={draft.state} onChange={(e) => setDraft({ ...draft, state: (e.target as HTMLSelectElement).value as Filters["state"] })}>
            <option value="">any</option>
            {STATES.map((s) => <option value={s} key={s}>{s.toLowerCase()}</option>)}
          </select>
        </label>
        {text("template", "Template", "e.g. aws-eks-basic")}
        {text("version", "Version", "e.g. 1.1.0")}
        <button type="submit" class="secondary">Filter</button>
      </form>
      <ProblemBox problem={list.error} label="Could not read the clusters" />
      {list.loaded && rows.length === 0 ? <p>{cursor ? "None in what was read so far." : "No cluster matches."}</p> : null}
      {rows.length ? (
        <table class="list" data-testid="admin-clusters">
          <ListHead caption="Clusters across tenants" columns={["Cluster", "Tenant", "State", "Template", "Where", "Changed"]} />
          <tbody>
            {rows.map((c) => (
              <tr key={c.id}>
                <td>
                  {c.name}
                  <div class="help">
                    <code class="small">{c.id}</code> · <Link href={`/admin/operations?cluster=${encodeURIComponent(c.id)}`}>operations</Link>
                  </div>
                </td>
                <td><Link href={`/admin/tenants/${encodeURIComponent(c.tenant)}`}>{c.tenant}</Link></td>
                <td><StateBadge state={c.state} /></td>
                <td class="nowrap">{c.template.name} {c.template.version}</td>
                <td class="nowrap">{c.provider} · {c.region}</td>
                <td class="nowrap">{when(c.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {cursor ? <button type="button" class="secondary" onClick={list.loadMore}>Load more</button> : null}
    </section>
  );
}

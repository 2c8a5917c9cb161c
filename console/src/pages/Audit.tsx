// The tenant's audit log: GET /v1/audit (admin scope), newest first, with its filters. A token without
// the admin scope gets the API's 403 problem, shown as is.

import { useState } from "preact/hooks";
import { api, asProblem, type Schemas } from "../api/client";
import { Link, PageTitle, ProblemBox, StateBadge, usePoll, when, ListHead } from "../ui";
import { actionText, actorText, clusterText, outcomeText, reasonText } from "../audit";

type Entry = Schemas["AuditEntry"];
type Filters = { cluster: string; actor: string; since: string };

const PAGE = 50;

function query(f: Filters, next?: string) {
  return {
    limit: PAGE,
    ...(f.cluster ? { cluster: f.cluster } : {}),
    ...(f.actor ? { actor: f.actor } : {}),
    ...(f.since ? { since: f.since } : {}),
    ...(next ? { next } : {}),
  };
}

export function AuditPage() {
  const empty: Filters = { cluster: "", actor: "", since: "" };
  const [draft, setDraft] = useState<Filters>(empty);
  const [filters, setFilters] = useState<Filters>(empty);
  const [more, setMore] = useState<Entry[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const { data, error } = usePoll(
    async (signal) => {
      const { data, error, response } = await api.GET("/v1/audit", { params: { query: query(filters) }, signal });
      if (error || !data) throw asProblem(error, response);
      return data;
    },
    10000,
    [filters.cluster, filters.actor, filters.since],
  );
  // Names for the entries' cluster ids: the tenant's clusters, deleted ones included (one page of 100).
  const { data: names } = usePoll(async (signal) => {
    const { data } = await api.GET("/v1/clusters", { params: { query: { limit: 100, include_deleted: true } }, signal });
    return new Map((data?.clusters ?? []).map((c) => [c.id, c.name]));
  }, 60_000, []);
  const rows = [...(data?.entries ?? []), ...more];
  const cursor = more.length ? next : (data?.next ?? null);
  const loadMore = async () => {
    if (!cursor) return;
    const { data: page } = await api.GET("/v1/audit", { params: { query: query(filters, cursor) } });
    if (page) {
      setMore((m) => [...m, ...page.entries]);
      setNext(page.next ?? null);
    }
  };
  const input = (id: keyof Filters, label: string, placeholder: string) => (
    <label>
      {label}{" "}
      <input
        value={draft[id]}
        placeholder={placeholder}
        onInput={(e) => setDraft({ ...draft, [id]: (e.target as HTMLInputElement).value.trim() })}
      />
    </label>
  );
  return (
    <section>
      <PageTitle>Audit log</PageTitle>
      <form
        class="toolbar"
        aria-label="Audit log filters"
        onSubmit={(e) => {
          e.preventDefault();
          setMore([]);
          // A cluster may be given by name: the API filters by id.
          const byName = [...(names ?? new Map<string, string>())].find(([, n]) => n === draft.cluster);
          setFilters(byName ? { ...draft, cluster: byName[0] } : draft);
        }}
      >
        {input("cluster", "Cluster", "name or cl-…")}
        {input("actor", "Actor", "sub or strato:scheduler")}
        {input("since", "Since", "24h, 7d or 2026-11-25T10:00:00Z")}
        <button type="submit" class="secondary">
          Filter
        </button>
      </form>
      <ProblemBox problem={error} label="Could not read the audit log" />
      {data && rows.length === 0 ? <p>No entries.</p> : null}
      {rows.length ? (
        <table class="list">
          <ListHead caption="Audit log entries, newest first" columns={["Time", "Who", "What", "Cluster / operation", "Outcome", "Request id"]} />
          <tbody>
            {rows.map((e) => {
              const why = reasonText(e);
              return (
                <tr key={`${e.time}-${e.request_id ?? ""}-${e.action}-${e.operation_id ?? e.cluster_id ?? ""}`}>
                  <td class="nowrap">{when(e.time)}</td>
                  <td class="nowrap">{actorText(e.actor)}</td>
                  <td title={e.action}>{actionText(e.action)}</td>
                  <td>
                    {e.cluster_id ? <Link href={`/clusters/${encodeURIComponent(e.cluster_id)}`} title={e.cluster_id}>{clusterText(e.cluster_id, names ?? new Map())}</Link> : null}
                    {e.cluster_id && e.operation_id ? <br /> : null}
                    {e.operation_id ? <Link href={`/operations/${encodeURIComponent(e.operation_id)}`} class="help" title={e.operation_id}>{`op-…${e.operation_id.slice(-8)}`}</Link> : null}
                  </td>
                  <td>
                    <StateBadge state={e.outcome} />{e.status && (e.outcome === "refused" || e.outcome === "failed") ? <span class="help"> {e.status}</span> : null}
                    <span class="sr-only"> ({outcomeText(e)})</span>
                    {why ? <div class="reason">{why}</div> : null}
                  </td>
                  <td><code class="small" title={e.request_id ?? undefined}>{e.request_id ? `${e.request_id.slice(0, 8)}…` : "—"}</code></td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
      {cursor ? (
        <button type="button" class="secondary" onClick={loadMore}>
          Load more
        </button>
      ) : null}
    </section>
  );
}

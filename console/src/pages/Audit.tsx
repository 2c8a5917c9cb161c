// The tenant's audit log: GET /v1/audit (admin scope), newest first, with its filters. A token without
// the admin scope gets the API's 403 problem, shown as is.

import { useState } from "preact/hooks";
import { api, asProblem, type Schemas } from "../api/client";
import { Link, PageTitle, ProblemBox, usePoll, when } from "../ui";

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

/** `refused 403` / `failed 500`; any other outcome (`accepted`, `succeeded`, `cancelled`), or one without a
 * status (Strato's own actions, an operation's end), as it is. */
export function outcomeText(e: Pick<Entry, "outcome" | "status">): string {
  return (e.outcome === "refused" || e.outcome === "failed") && e.status ? `${e.outcome} ${e.status}` : e.outcome;
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
          setFilters(draft);
        }}
      >
        {input("cluster", "Cluster", "cl-…")}
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
          <caption class="sr-only">Audit log entries, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Actor</th>
              <th scope="col">Action</th>
              <th scope="col">Target</th>
              <th scope="col">Outcome</th>
              <th scope="col">Request id</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((e) => (
              <tr key={`${e.time}-${e.request_id ?? ""}-${e.action}-${e.operation_id ?? e.cluster_id ?? ""}`}>
                <td>{when(e.time)}</td>
                <td>{e.actor}</td>
                <td>
                  <code>{e.action}</code>
                </td>
                <td>
                  {e.cluster_id ? <Link href={`/clusters/${encodeURIComponent(e.cluster_id)}`}>{e.cluster_id}</Link> : null}{" "}
                  {e.operation_id ? <Link href={`/operations/${encodeURIComponent(e.operation_id)}`}>{e.operation_id}</Link> : null}
                </td>
                <td title={e.detail ?? undefined}>{outcomeText(e)}</td>
                <td>{e.request_id ?? "-"}</td>
              </tr>
            ))}
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

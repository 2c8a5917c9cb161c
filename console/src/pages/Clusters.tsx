import { isDegraded } from "../health";
import { useState } from "preact/hooks";
import { api, asProblem, type Cluster, type ClusterState } from "../api/client";
import { Link, PageTitle, ProblemBox, StateBadge, usePoll, when, ListHead } from "../ui";
import { AwaitingApproval } from "./Approval";

const STATES: ClusterState[] = ["PENDING", "PROVISIONING", "CONFIGURING", "ACTIVE", "UPDATING", "DELETING", "DELETED", "FAILED"];

export function ClustersPage() {
  // `?state=` (the dashboard's per-state links) picks the first filter.
  const [state, setState] = useState<ClusterState | "">(() => {
    const q = (new URLSearchParams(location.search).get("state") ?? "").toUpperCase() as ClusterState;
    return STATES.includes(q) ? q : "";
  });
  const [more, setMore] = useState<Cluster[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const { data, error } = usePoll(
    async (signal) => {
      const { data, error, response } = await api.GET("/v1/clusters", {
        params: { query: { limit: 50, ...(state ? { state } : {}) } },
        signal,
      });
      if (error || !data) throw asProblem(error, response);
      return data;
    },
    3000,
    [state],
  );
  const first = data?.clusters ?? [];
  const seen = new Set(first.map((c) => c.id));
  const rows = [...first, ...more.filter((c) => !seen.has(c.id))];
  const cursor = more.length ? next : (data?.next ?? null);
  const loadMore = async () => {
    if (!cursor) return;
    const { data: page } = await api.GET("/v1/clusters", { params: { query: { limit: 50, next: cursor, ...(state ? { state } : {}) } } });
    if (page) {
      setMore((m) => [...m, ...page.clusters]);
      setNext(page.next ?? null);
    }
  };
  return (
    <section>
      <PageTitle>Clusters</PageTitle>
      <div class="toolbar">
        <Link href="/clusters/new" class="button">
          New cluster
        </Link>
        <label>
          State{" "}
          <select
            value={state}
            onChange={(e) => {
              setState((e.target as HTMLSelectElement).value as ClusterState | "");
              setMore([]);
            }}
          >
            <option value="">All</option>
            {STATES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </label>
        <span class="help" aria-live="polite">
          {data ? `${rows.length} cluster${rows.length === 1 ? "" : "s"}, refreshed every 3 s` : "Loading…"}
        </span>
      </div>
      <ProblemBox problem={error} label="Could not list clusters" />
      {data && rows.length === 0 ? (
        <p>
          No clusters yet. <Link href="/clusters/new">Create one</Link>.
        </p>
      ) : null}
      {rows.length ? (
        <table class="list">
          <ListHead caption="Your clusters, newest first" columns={["Name", "State", "Template", "Provider / region", "Last operation", "Drift", "Updated"]} />
          <tbody>
            {rows.map((c) => (
              <tr key={c.id}>
                <td>
                  <Link href={`/clusters/${encodeURIComponent(c.id)}`}>{c.name}</Link>
                </td>
                <td>
                  <StateBadge state={c.state} /> <AwaitingApproval last={c.last_operation} />
                  {isDegraded(c.health) ? <> <span class="badge badge-degraded" title={c.health.reasons.join("; ")}>Degraded</span></> : null}
                </td>
                <td>
                  {c.template.name}@{c.template.version}
                </td>
                <td>
                  {c.provider} / {c.region}
                </td>
                <td>
                  {c.last_operation ? (
                    <>
                      <Link href={`/operations/${encodeURIComponent(c.last_operation.id)}`} aria-label={`${c.last_operation.kind} operation ${c.last_operation.id}`}>
                        {c.last_operation.kind}
                      </Link>{" "}
                      <StateBadge state={c.last_operation.status} /> <span class="help">{when(c.last_operation.updated_at)}</span>
                    </>
                  ) : (
                    "—"
                  )}
                </td>
                <td>{c.drift.drifted ? <span class="badge badge-drift">Drifted</span> : c.drift.checked_at ? "In sync" : "Not checked"}</td>
                <td>{when(c.updated_at)}</td>
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

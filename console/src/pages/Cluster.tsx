// One cluster, in tabs (the tab is in the URL: /clusters/:id/<tab>): Overview (state, error, Connect,
// outputs, drift), Variables (and the update form), Operations, State (versions, restore), Settings (drift,
// approval, expiry, and the danger zone with delete). Destructive actions live only in Settings.

import { useState } from "preact/hooks";
import { api, asProblem, idempotencyKey, problemText } from "../api/client";
import { navigate } from "../router";
import { Link, PageTitle, ProblemBox, StateBadge, usePoll } from "../ui";
import { OperationsList, StateVersions, UpdateVariables } from "./ClusterParts";
import { AwaitingApproval } from "./Approval";
import type { Act } from "./act";
import { ClusterOverview, ClusterSettings, TABS, tabOf } from "./ClusterTabs";


const BUSY = ["PENDING", "PROVISIONING", "CONFIGURING", "UPDATING", "DELETING"];


export function ClusterPage({ id, tab }: { id: string; tab?: string }) {
  const { data: c, error, reload, setData } = usePoll(
    async (signal) => {
      const { data, error, response } = await api.GET("/v1/clusters/{id}", { params: { path: { id } }, signal });
      if (error || !data) throw asProblem(error, response);
      return data;
    },
    3000,
    [id],
  );
  const [actErr, setActErr] = useState<string | null>(null);
  const current = tabOf(tab);

  const act: Act = async (what, call) => {
    setActErr(null);
    const { data, error, response } = await call();
    if (error || !data) {
      setActErr(`${what}: ${problemText(asProblem(error, response))}`);
      return;
    }
    if (data.cluster) setData(data.cluster);
    navigate(`/operations/${encodeURIComponent(data.operation.id)}`);
  };

  if (!c) {
    return (
      <section>
        <PageTitle>Cluster {id}</PageTitle>
        {error ? <ProblemBox problem={error} label="Could not read the cluster" /> : <p>Loading…</p>}
        <p><Link href="/clusters">Back to clusters</Link></p>
      </section>
    );
  }
  const base = `/clusters/${encodeURIComponent(id)}`;
  return (
    <section>
      <PageTitle>Cluster {c.name}</PageTitle>
      <p class="subtitle">
        <StateBadge state={c.state} /> <AwaitingApproval last={c.last_operation} />{" "}
        <span class="help">{c.template.name}@{c.template.version} · {c.provider} / {c.region} · <code>{c.id}</code></span>
      </p>
      {BUSY.includes(c.state) ? <p class="help">An operation is in progress; this page refreshes every 3 s.</p> : null}
      <nav class="tabs" aria-label="Cluster sections">
        {TABS.map((t) => (
          <Link key={t.id} href={t.id === "overview" ? base : `${base}/${t.id}`} class={t.id === current ? "tab current" : "tab"} aria-current={t.id === current ? "page" : undefined}>
            {t.title}
          </Link>
        ))}
      </nav>
      <ProblemBox problem={actErr} />
      {current === "overview" ? <ClusterOverview cluster={c} act={act} reload={reload} /> : null}
      {current === "variables" ? (
        <>
          <h2>Variables</h2>
          <UpdateVariables cluster={c} onQueued={(opId) => navigate(`/operations/${encodeURIComponent(opId)}`)} />
        </>
      ) : null}
      {current === "operations" ? (
        <>
          <h2>Operations</h2>
          <OperationsList clusterId={c.id} />
        </>
      ) : null}
      {current === "state" ? (
        <>
          <h2>State versions</h2>
          <p class="help">Terraform's state after each run. Restoring an older version makes it the latest; the next operation plans against it.</p>
          <StateVersions clusterId={c.id} onQueued={(opId) => navigate(`/operations/${encodeURIComponent(opId)}`)} />
        </>
      ) : null}
      {current === "settings" ? <ClusterSettings cluster={c} act={act} reload={reload} headers={{ "Idempotency-Key": idempotencyKey() }} /> : null}
    </section>
  );
}

// One rollout: its phase (and why it paused), the fleet summary, pause / resume / abort, and every selected
// cluster with what its plan on the new version does (creates, updates, replacements and destroys by
// address, the monthly cost change, policy denials), paged.

import { useState } from "preact/hooks";
import { api, asProblem, problemText } from "../api/client";
import { ConfirmDialog } from "../dialog";
import { actions, badgeOf, money, planCounts, type RolloutMember } from "../rollouts";
import { Link, PageTitle, ProblemBox, usePoll, when, ListHead } from "../ui";
import { rolloutPaths } from "./Rollouts";

export function RolloutPage({ id, operator }: { id: string; operator: boolean }) {
  const paths = rolloutPaths(operator);
  const [more, setMore] = useState<RolloutMember[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [confirm, setConfirm] = useState<null | "abort">(null);
  const { data, error, reload } = usePoll(async (signal) => {
    const { data, error, response } = await api.GET(paths.one, { params: { path: { id } }, signal });
    if (error || !data) throw asProblem(error, response);
    return data;
  }, 5000, [id, operator]);
  const members = [...(data?.members ?? []), ...more];
  const cursor = more.length ? next : (data?.next ?? null);
  const loadMore = async () => {
    if (!cursor) return;
    const { data: page } = await api.GET(paths.one, { params: { path: { id }, query: { next: cursor } } as never });
    if (page) {
      setMore((m) => [...m, ...page.members]);
      setNext(page.next ?? null);
    }
  };
  const act = async (what: "pause" | "resume" | "abort", body?: object) => {
    setProblem(null);
    const path = `${paths.one}/${what}` as "/v1/rollouts/{id}/pause";
    const { error, response } = await api.POST(path, { params: { path: { id } }, body: body as never });
    if (error) setProblem(problemText(asProblem(error, response)));
    setMore([]);
    reload();
  };
  const can = data ? actions(data.phase) : { pause: false, resume: false, abort: false };
  return (
    <section>
      <p><Link href={paths.page}>← Rollouts</Link></p>
      <PageTitle>Rollout {id}</PageTitle>
      <ProblemBox problem={error} label="Could not read the rollout" />
      {data ? (
        <>
          <dl class="facts">
            <dt>Template</dt>
            <dd>{data.template} → {data.to_version}</dd>
            <dt>Mode</dt>
            <dd>{data.mode === "preview" ? "preview (nothing is applied)" : "apply in waves"}</dd>
            <dt>Phase</dt>
            <dd data-testid="rollout-phase">
              <span class={`badge badge-${badgeOf(data.phase)}`}>{data.phase}</span>
              {data.wave != null && data.mode === "apply" ? <> — wave {data.wave + 1}</> : null}
              {data.soak_until ? <> — next wave at {when(data.soak_until)}</> : null}
            </dd>
            {data.pause_reason ? (
              <>
                <dt>Paused because</dt>
                <dd data-testid="rollout-pause-reason">{data.pause_reason}</dd>
              </>
            ) : null}
            <dt>Fleet</dt>
            <dd data-testid="rollout-summary">{data.summary.text}</dd>
            <dt>Started by</dt>
            <dd>{data.created_by}{data.tenant_id ? ` (tenant ${data.tenant_id})` : ""}</dd>
          </dl>
          <div class="actions">
            {can.pause ? <button type="button" class="secondary" onClick={() => act("pause")}>Pause</button> : null}
            {can.resume ? <button type="button" onClick={() => act("resume")}>Resume</button> : null}
            {can.resume ? <button type="button" class="secondary" onClick={() => act("resume", { skip_failed: true })}>Resume without the failed</button> : null}
            {can.abort ? <button type="button" class="danger" onClick={() => setConfirm("abort")}>Abort…</button> : null}
          </div>
          <ProblemBox problem={problem} />
        </>
      ) : null}
      {members.length ? (
        <table class="list" data-testid="rollout-members">
          <ListHead caption="The selected clusters in wave order, with their plans on the new version" columns={["Cluster", operator ? "Tenant" : null, "From", "Wave", "Status", <abbr title="create, update, replace, destroy">+ ~ ± −</abbr>, "Replaced / destroyed", "Cost"]} />
          <tbody>
            {members.map((m) => (
              <tr key={m.cluster_id}>
                <td>{operator ? <code class="small">{m.cluster_id}</code> : <Link href={`/clusters/${encodeURIComponent(m.cluster_id)}`}>{m.cluster_id}</Link>}
                  {m.operation_id ? <div class="help"><Link href={`/operations/${encodeURIComponent(m.operation_id)}`}>{m.status === "planning" || m.status === "planned" ? "its plan" : "its operation"}</Link></div> : null}
                </td>
                {operator ? <td><Link href={`/admin/tenants/${encodeURIComponent(m.tenant_id)}`}>{m.tenant_id}</Link></td> : null}
                <td>{m.from_version}</td>
                <td>{m.wave + 1}</td>
                <td>
                  <span class={`badge badge-${badgeOf(m.status)}`}>{m.status}</span>
                  {m.reason ? <div class="reason">{m.reason}</div> : null}
                  {m.denied.length ? <div class="reason">denied by {m.denied.join(", ")}</div> : null}
                </td>
                <td class="nowrap">{planCounts(m)}</td>
                <td>
                  {m.replace.map((a) => <div key={a}><code class="small">± {a}</code></div>)}
                  {m.destroy.map((a) => <div key={a}><code class="small">− {a}</code></div>)}
                </td>
                <td class="nowrap">{money(m.monthly_delta)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {cursor ? <button type="button" class="secondary" onClick={loadMore}>More clusters</button> : null}
      {confirm === "abort" ? (
        <ConfirmDialog title={`Abort rollout ${id}?`} confirmLabel="Abort rollout" danger onClose={() => setConfirm(null)} onConfirm={() => act("abort")}>
          <p>Clusters already upgraded stay upgraded; the rest are left as they are. A rollback is a rollout to the previous version.</p>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}

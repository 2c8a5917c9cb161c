// One operation: status, steps with durations, error (what/step/fix), approval (approve/reject while it
// waits), cancel, estimate, live log.

import { useEffect, useRef, useState } from "preact/hooks";
import { api, asProblem, idempotencyKey, problemText, type Operation } from "../api/client";
import { ENDED } from "../approval";
import { getConfig } from "../config";
import { Follower } from "../logs/follow";
import { LogView } from "../logs/LogView";
import { Link, PageTitle, ProblemBox, StateBadge, duration, usePoll, when } from "../ui";
import { ApprovalSection } from "./Approval";
import { EstimateView } from "./Estimate";
import { planBadge, planFromLog, planWords, type PlanCounts } from "../logs/plan";

// ENDED (../approval): succeeded, failed, cancelled — not awaiting_approval, which waits for an approver.
const LIVE_LABEL: Record<string, string> = {
  connecting: "Connecting to the live log…",
  live: "Live",
  reconnecting: "Reconnecting",
  ended: "The log is complete",
  failed: "The live log stopped",
};

async function ticket(): Promise<string> {
  const { data, error, response } = await api.POST("/v1/ws-tickets", {});
  if (error || !data) throw new Error(problemText(asProblem(error, response)));
  return data.token;
}

export function OperationPage({ id }: { id: string }) {
  const [ended, setEnded] = useState(false);
  const { data: op, error, reload } = usePoll(async (signal) => {
    const { data, error, response } = await api.GET("/v1/operations/{id}", { params: { path: { id } }, signal });
    if (error || !data) throw asProblem(error, response);
    return data;
  }, 2000, [id], !ended);
  useEffect(() => {
    if (op && ENDED.includes(op.status)) setEnded(true);
  }, [op?.status]);
  const clusterId = op?.cluster_id ?? null;
  const { data: cluster } = usePoll(async (signal) => {
    if (!clusterId) return null;
    const { data } = await api.GET("/v1/clusters/{id}", { params: { path: { id: clusterId } }, signal });
    return data ?? null;
  }, 3000, [clusterId]);

  // Live log
  const [rev, setRev] = useState(0);
  const [live, setLive] = useState<{ state: string; detail?: string }>({ state: "connecting" });
  const [lastStatus, setLastStatus] = useState<{ cluster_state: string; operation_status: string; step?: string | null; message?: string | null } | null>(null);
  const follower = useRef<Follower | null>(null);
  const ws = getConfig().ws_endpoint;
  useEffect(() => {
    if (!ws) {
      setLive({ state: "failed", detail: "No WebSocket endpoint configured (/console.json has no ws_endpoint)." });
      return;
    }
    let raf = 0;
    const f = new Follower(id, { ticket, wsUrl: ws }, {
      onLines: () => {
        if (!raf) raf = requestAnimationFrame(() => { raf = 0; setRev(f.store.lines.length); });
      },
      onStatus: (s) => { setLastStatus(s); reload(); },
      onState: (state, detail) => { setLive({ state, detail }); if (state === "ended") reload(); },
    });
    follower.current = f;
    f.start();
    return () => { cancelAnimationFrame(raf); f.stop(); };
  }, [id, ws]);

  const [cancelErr, setCancelErr] = useState<string | null>(null);
  const cancel = async () => {
    setCancelErr(null);
    const { error, response } = await api.POST("/v1/operations/{id}/cancel", { params: { path: { id }, header: { "Idempotency-Key": idempotencyKey() } } });
    if (error) setCancelErr(problemText(asProblem(error, response)));
    reload();
  };

  if (!op) {
    return (
      <section>
        <PageTitle>Operation {id}</PageTitle>
        {error ? <ProblemBox problem={error} label="Could not read the operation" /> : <p>Loading…</p>}
      </section>
    );
  }
  const store = follower.current?.store;
  const plan: PlanCounts | null = op.approval?.summary ?? (store ? planFromLog(store.lines) : null);
  const over = ENDED.includes(op.status);
  const took = over ? Date.parse(op.ended_at ?? op.updated_at) - Date.parse(op.started_at ?? op.created_at) : NaN;
  return (
    <section>
      <PageTitle>Operation {op.kind} {op.spec?.name ?? ""}</PageTitle>
      <p>
        Status <span data-testid="op-status"><StateBadge state={op.status} /></span>
        {op.cancel_requested && !ENDED.includes(op.status) ? " (cancel requested)" : ""}
        {clusterId ? (
          <>
            {" "}· Cluster <Link href={`/clusters/${encodeURIComponent(clusterId)}`}>{op.spec?.name ?? clusterId}</Link>{" "}
            <span data-testid="cluster-state"><StateBadge state={cluster?.state ?? lastStatus?.cluster_state ?? "…"} /></span>
          </>
        ) : null}
      </p>
      <dl class="facts">
        <dt>Operation</dt><dd><code>{op.id}</code></dd>
        <dt>Requested</dt><dd>{when(op.created_at)}{op.requested_by ? ` by ${op.requested_by}` : ""}</dd>
        {over ? <><dt>Took</dt><dd>{duration(took)}{op.ended_at ? `, ended ${when(op.ended_at)}` : ""}</dd></> : null}
        <dt>Plan</dt>
        <dd data-testid="plan-summary">
          {plan ? (
            <>
              <span class="plan-badge" title={planBadge(plan)}>
                <span class="plan-add">+{plan.add}</span> <span class="plan-change">~{plan.change}</span> <span class="plan-destroy">−{plan.destroy}</span>
              </span>{" "}
              ({planWords(plan)})
            </>
          ) : over ? "no plan" : "not planned yet"}
        </dd>
        <dt>Attempt</dt><dd>{op.attempt}</dd>
        {op.current_step && !ENDED.includes(op.status) ? <><dt>Current step</dt><dd>{op.current_step}</dd></> : null}
        {op.wait_reason ? <><dt>Waiting</dt><dd>{op.wait_reason}</dd></> : null}
      </dl>
      {!ENDED.includes(op.status) ? (
        <p><button type="button" class="danger" disabled={op.cancel_requested} onClick={cancel}>Cancel operation</button></p>
      ) : null}
      <ProblemBox problem={cancelErr} />
      <ApprovalSection op={op} onDecided={reload} />
      {op.error ? (
        <div class="problem" role="alert">
          <strong>{op.error.what}</strong> (step <code>{op.error.step}</code>, {op.error.category}{op.error.retryable ? ", retryable" : ""})<br />
          Fix: {op.error.fix}
        </div>
      ) : null}
      <Steps op={op} />
      <Timeline id={op.id} ended={ENDED.includes(op.status)} />
      {op.notes.length ? (<><h2>Notes</h2><ul class="help">{op.notes.map((n) => <li>{n}</li>)}</ul></>) : null}
      {op.estimate ? (<><h2>Cost estimate</h2><EstimateView e={op.estimate} /></>) : null}
      <h2>Log</h2>
      <p class="help" role="status">
        {LIVE_LABEL[live.state] ?? live.state}{live.detail ? `: ${live.detail}` : ""}
        {lastStatus?.message ? ` — ${lastStatus.message}` : ""}
        {op.status === "awaiting_approval" ? " — no runner runs while the plan waits for approval" : ""}
        {store && store.pendingCount() ? ` — waiting for lines from seq ${store.next}` : ""}
      </p>
      {store ? <LogView store={store} rev={rev} name={op.id} complete={store.complete()} /> : null}
    </section>
  );
}

function Steps({ op }: { op: Operation }) {
  if (!op.steps.length) return <p class="help">No steps started yet.</p>;
  const now = Date.now();
  return (
    <>
      <h2>Steps</h2>
      <ol class="steps">
        {op.steps.map((s) => {
          const end = s.finished_at ? Date.parse(s.finished_at) : now;
          const st = s.ok === true ? "succeeded" : s.ok === false ? "failed" : "running";
          return (
            <li>
              <StateBadge state={st} /> <strong>{s.name}</strong> — {duration(end - Date.parse(s.started_at))}
              {s.finished_at ? "" : " so far"}
            </li>
          );
        })}
      </ol>
    </>
  );
}

function Timeline({ id, ended }: { id: string; ended: boolean }) {
  const { data } = usePoll(async (signal) => {
    const { data } = await api.GET("/v1/operations/{id}/timeline", { params: { path: { id } }, signal });
    return data ?? null;
  }, 3000, [id], !ended);
  if (!data?.entries.length) return null;
  return (
    <details>
      <summary>Timeline ({data.entries.length} moments, {duration(data.duration_ms)})</summary>
      <ol class="steps">
        {data.entries.map((e) => (
          <li>
            {when(e.at)} — <strong>{e.event.replace(/_/g, " ")}</strong>
            {e.step ? ` ${e.step}` : ""}
            {e.ok === false ? " (failed)" : ""}
            {e.category ? ` [${e.category}]` : ""}
            {e.detail ? `: ${e.detail}` : ""}
          </li>
        ))}
      </ol>
    </details>
  );
}

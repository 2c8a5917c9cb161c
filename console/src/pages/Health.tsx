// The cluster page's health panel: status, nodes Ready of requested, Kubernetes version, unhealthy
// components, last report, and why it is degraded (the agent's reports; the scheduler when it went silent).

import type { Cluster } from "../api/client";
import { healthLabel, healthNote, nodesText } from "../health";
import { when, ListHead } from "../ui";

export function HealthPanel({ health: h }: { health: Cluster["health"] }) {
  const label = healthLabel(h);
  const note = healthNote(h);
  const nodes = nodesText(h);
  return (
    <section aria-labelledby="health-title" class="health">
      <h2 id="health-title">Health</h2>
      <p>
        <span class={`badge badge-health-${label.tone}`}>{label.text}</span>
        {h?.since ? <span class="help"> since {when(h.since)}</span> : null}
      </p>
      {note ? <p class="help">{note}</p> : null}
      {h && h.status !== "unknown" ? (
        <dl class="facts">
          <dt>Nodes</dt><dd>{nodes ?? "—"}</dd>
          <dt>Kubernetes</dt><dd>{h.kubernetes_version ?? "—"}</dd>
          <dt>Unhealthy components</dt><dd>{h.unhealthy_components.length ? h.unhealthy_components.join(", ") : "none"}</dd>
          <dt>Last report</dt><dd>{h.last_seen ? when(h.last_seen) : "—"}</dd>
          {h.agent_version ? <><dt>Agent</dt><dd>{h.agent_version}</dd></> : null}
        </dl>
      ) : null}
      {h?.reasons.length ? (
        <ul class="reasons">
          {h.reasons.map((r) => <li>{r}</li>)}
        </ul>
      ) : null}
      {h?.warnings.length ? (
        <table class="list">
          <ListHead caption="Recent warnings in the cluster, newest first" columns={["Reason", "Object", "Message", "Count"]} />
          <tbody>
            {h.warnings.map((w) => (
              <tr><td>{w.reason}</td><td><code>{w.object}</code></td><td class="wrap">{w.message}</td><td>{w.count}</td></tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

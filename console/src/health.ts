// A cluster's health as its agent reports it (the API's `health`): what the cluster page's panel and the
// list's badge show. Pure, so the unit tests read it without a DOM.

import type { Cluster } from "./api/client";

export type Health = Cluster["health"];

export type Tone = "ok" | "warn" | "muted";

/** The status's words and tone. */
export function healthLabel(h: Health | undefined): { text: string; tone: Tone } {
  switch (h?.status) {
    case "healthy":
      return { text: "Healthy", tone: "ok" };
    case "degraded":
      return { text: "Degraded", tone: "warn" };
    default:
      return { text: "Unknown", tone: "muted" };
  }
}

/** Whether the list shows the degraded badge. */
export function isDegraded(h: Health | undefined): boolean {
  return h?.status === "degraded";
}

/** `2 of 3 Ready` (and the total when it differs), or null before the first report. */
export function nodesText(h: Health | undefined): string | null {
  if (!h || h.nodes_ready == null || h.nodes_requested == null) return null;
  const total = h.nodes_total != null && h.nodes_total !== h.nodes_ready ? `, ${h.nodes_total} in all` : "";
  return `${h.nodes_ready} of ${h.nodes_requested} requested Ready${total}`;
}

/** What the panel says under the facts: why it is degraded, or why nothing is known. */
export function healthNote(h: Health | undefined): string | null {
  if (!h || h.status === "unknown") return "No report from the cluster's agent yet (or its template installs none).";
  return null;
}

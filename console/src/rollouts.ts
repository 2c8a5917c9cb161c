// Fleet rollouts in the console: the new-rollout form's draft turned into POST /v1/rollouts's body (each
// field checked as the API checks it, so a mistake shows beside its field before the request), and the texts
// of a rollout's phase and its members' plans.

import type { Schemas } from "./api/client";

export type Rollout = Schemas["Rollout"];
export type RolloutMember = Schemas["RolloutMember"];

export type RolloutDraft = {
  template: string;
  to_version: string;
  /** Comma-separated versions; empty: every version but the target. */
  from_versions: string;
  /** Comma-separated cluster ids or names; empty: the whole fleet of the template. */
  clusters: string;
  /** Operator only: comma-separated tenant ids; empty: every tenant. */
  tenants: string;
  mode: "preview" | "apply";
  /** e.g. `1, 25%, 100%`: a count of clusters or a cumulative percent of the fleet per wave. */
  waves: string;
  soak_minutes: string;
  /** Comma-separated addresses (or prefixes) whose replacement does not pause the rollout. */
  allow_replace: string;
  allow_destroy: boolean;
  max_monthly_delta: string;
};

export const EMPTY_ROLLOUT: RolloutDraft = {
  template: "",
  to_version: "",
  from_versions: "",
  clusters: "",
  tenants: "",
  mode: "preview",
  waves: "1, 25%, 100%",
  soak_minutes: "0",
  allow_replace: "",
  allow_destroy: false,
  max_monthly_delta: "",
};

const list = (s: string) =>
  s
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean);

type Wave = { clusters: number } | { percent: number };

/** `1, 25%, 100%` → waves, or what is wrong with them. */
export function parseWaves(text: string): { waves: Wave[]; error?: string } {
  const parts = list(text);
  if (!parts.length) return { waves: [], error: "at least one wave, the last 100%" };
  const waves: Wave[] = [];
  for (const p of parts) {
    const pct = /^(\d{1,3})\s*%$/.exec(p);
    if (pct && Number(pct[1]) >= 1 && Number(pct[1]) <= 100) waves.push({ percent: Number(pct[1]) });
    else if (/^\d+$/.test(p) && Number(p) >= 1) waves.push({ clusters: Number(p) });
    else return { waves: [], error: `'${p}' is neither a number of clusters (e.g. 1) nor a percent of the fleet (e.g. 25%)` };
  }
  const last = waves[waves.length - 1];
  if (!("percent" in last) || last.percent !== 100) return { waves: [], error: "the last wave must be 100% (the whole fleet)" };
  return { waves };
}

/** The request body for the draft and each field's problems (field names as the API names them). */
export function rolloutRequest(d: RolloutDraft, operator: boolean): { body: Record<string, unknown>; errors: Record<string, string[]> } {
  const errors: Record<string, string[]> = {};
  if (!d.template.trim()) errors.template = ["required: the template whose clusters move"];
  if (!d.to_version.trim()) errors.to_version = ["required: the published version to go to"];
  const selector: Record<string, string[]> = {};
  if (list(d.from_versions).length) selector.from_versions = list(d.from_versions);
  if (list(d.clusters).length) selector.clusters = list(d.clusters);
  if (operator && list(d.tenants).length) selector.tenants = list(d.tenants);
  const body: Record<string, unknown> = { template: d.template.trim(), to_version: d.to_version.trim(), mode: d.mode };
  if (Object.keys(selector).length) body.selector = selector;
  if (d.mode === "apply") {
    const w = parseWaves(d.waves);
    if (w.error) errors.waves = [w.error];
    else body.waves = w.waves;
    const soak = d.soak_minutes.trim();
    if (soak && (!/^\d+$/.test(soak) || Number(soak) > 7 * 24 * 60)) errors.soak_seconds = ["whole minutes, at most 7 days (10080)"];
    else if (soak && Number(soak) > 0) body.soak_seconds = Number(soak) * 60;
  }
  // The stop rules go with a preview too: they are the ones of the apply in mind, and the preview's report
  // counts the clusters they would hold (without them, every replacement and destroy counts as held).
  const stop: Record<string, unknown> = {};
  if (list(d.allow_replace).length) stop.allow_replace = list(d.allow_replace);
  if (d.allow_destroy) stop.allow_destroy = true;
  const delta = d.max_monthly_delta.trim();
  if (delta && (!/^\d+(\.\d{1,2})?$/.test(delta))) errors["stop.max_monthly_delta"] = ["US dollars, 0 or more, e.g. 50"];
  else if (delta) stop.max_monthly_delta = Number(delta);
  if (Object.keys(stop).length) body.stop = stop;
  return { body, errors };
}

/** What an operator may do with a rollout in this phase. */
export function actions(phase: string): { pause: boolean; resume: boolean; abort: boolean } {
  const live = phase === "running" || phase === "soaking";
  return { pause: live, resume: phase === "paused", abort: live || phase === "paused" };
}

/** `+1 ~2 ±1 -0`: what a member's plan creates, updates, replaces and destroys (planned members only). */
export function planCounts(m: Pick<RolloutMember, "create" | "update" | "replace" | "destroy" | "status">): string {
  if (m.status === "pending" || m.status === "planning") return "—";
  return `+${m.create} ~${m.update} ±${m.replace.length} -${m.destroy.length}`;
}

export function money(delta: number | null | undefined): string {
  if (delta == null) return "—";
  const sign = delta > 0 ? "+" : delta < 0 ? "−" : "±";
  return `${sign}$${Math.abs(delta).toFixed(2)}/month`;
}

/** The badge class of a member's or a rollout's state (reusing the clusters' colours). */
export function badgeOf(s: string): string {
  switch (s) {
    case "completed":
    case "upgraded":
    case "planned":
      return "active";
    case "failed":
    case "aborted":
      return "failed";
    case "paused":
    case "held":
      return "pending";
    case "skipped":
      return "deleted";
    default:
      return "updating";
  }
}

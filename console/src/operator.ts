// The platform operator's view: who is one, and a tenant's settings as a form (the drafts are strings, as
// inputs hold them; `tenantChange` turns a draft into the body of POST/PATCH /v1/admin/tenants, sending only
// what changed and checking each field as the API does, so a mistake is shown before the request).

import type { Schemas } from "./api/client";

export type AdminTenant = Schemas["AdminTenant"];

/** The scope the API's operator routes need; the API, not the console, decides who holds it. */
export const OPERATOR_SCOPE = "platform:admin";

/** Whether a token's claims are the platform operator's: its scope grants `platform:admin`, and it names no
 *  tenant (an operator's token never does; the tenant claim's name is the deployment's — `tenant_id`,
 *  `custom:tenant_id`, … — so any claim named so counts). The API refuses a tenant token on every operator
 *  route whatever the console shows. */
export function isOperator(claims: Record<string, unknown>): boolean {
  if (typeof claims.scope !== "string" || !claims.scope.split(/\s+/).includes(OPERATOR_SCOPE)) return false;
  return !Object.keys(claims).some((k) => /(^|[:_])tenant(_id)?$/.test(k) && claims[k]);
}

export const COUNTS = ["max_clusters", "max_open_operations", "max_concurrent_operations"] as const;
export type Count = (typeof COUNTS)[number];

export type TenantDraft = Record<Count, string> & {
  monthly_budget: string;
  approval: "" | "auto" | "required";
  max_ttl_hours: string;
};

export const EMPTY_DRAFT: TenantDraft = {
  max_clusters: "",
  max_open_operations: "",
  max_concurrent_operations: "",
  monthly_budget: "",
  approval: "",
  max_ttl_hours: "",
};

/** The form as it stands for a tenant's current settings. */
export function draftOf(t: AdminTenant): TenantDraft {
  return {
    max_clusters: String(t.max_clusters),
    max_open_operations: String(t.max_open_operations),
    max_concurrent_operations: String(t.max_concurrent_operations),
    monthly_budget: t.monthly_budget == null ? "" : String(t.monthly_budget),
    approval: t.approval === "auto" || t.approval === "required" ? t.approval : "",
    max_ttl_hours: t.max_ttl_hours == null ? "" : String(t.max_ttl_hours),
  };
}

const WHOLE = /^\d+$/;
const TENANT_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/;

export function validateTenantId(v: string): string[] {
  if (!v) return ["required"];
  return TENANT_ID.test(v) ? [] : ["1-64 characters of a-z, 0-9, '-' or '_', starting with a letter or digit"];
}

/** The request body for the draft (against `current`, or a new tenant when null) and each field's problems.
 *  An emptied field asks for the platform default (`null`); an untouched one is not sent. */
export function tenantChange(
  current: AdminTenant | null,
  draft: TenantDraft,
): { body: Record<string, unknown>; errors: Record<string, string[]> } {
  const before = current ? draftOf(current) : EMPTY_DRAFT;
  const body: Record<string, unknown> = {};
  const errors: Record<string, string[]> = {};
  const set = (k: keyof TenantDraft, v: unknown) => {
    if (draft[k] !== before[k]) body[k] = v;
  };
  for (const k of COUNTS) {
    const v = draft[k].trim();
    if (v === "") set(k, null);
    else if (!WHOLE.test(v) || Number(v) < 1 || Number(v) > 100000) errors[k] = ["a whole number from 1 to 100000"];
    else set(k, Number(v));
  }
  const budget = draft.monthly_budget.trim();
  if (budget === "") set("monthly_budget", null);
  else if (!/^\d+(\.\d{1,2})?$/.test(budget) || Number(budget) <= 0) errors.monthly_budget = ["US dollars above 0, e.g. 250 or 99.50"];
  else set("monthly_budget", Number(budget));
  set("approval", draft.approval === "" ? null : draft.approval);
  const ttl = draft.max_ttl_hours.trim();
  if (ttl === "") set("max_ttl_hours", null);
  else if (!WHOLE.test(ttl) || Number(ttl) < 1) errors.max_ttl_hours = ["a whole number of hours, at least 1"];
  else set("max_ttl_hours", Number(ttl));
  return { body, errors };
}

/** "3 of 10" with how full it is (0..1), for the usage columns. */
export function usage(used: number, max: number): { text: string; ratio: number } {
  return { text: `${used} of ${max}`, ratio: max > 0 ? Math.min(1, used / max) : 1 };
}

export function budgetText(b: number | null | undefined): string {
  return b == null ? "none" : `$${b.toLocaleString("en-US", { maximumFractionDigits: 2 })}/month`;
}

export function lifetimeText(h: number | null | undefined): string {
  if (h == null) return "platform default";
  return h % 24 === 0 ? `${h / 24} d` : `${h} h`;
}

/** The API's field errors (422 `errors`) as messages by field, each saying what is wrong and what is allowed. */
export function messagesByField(errors: Schemas["FieldError"][] | undefined): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const e of errors ?? []) (out[e.field] ??= []).push(e.allowed ? `${e.problem}: ${e.allowed}` : e.problem);
  return out;
}

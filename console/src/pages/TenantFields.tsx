// A tenant's settings as form fields (quotas, budget, approval default, longest lifetime): the operator's
// new-tenant form and tenant page share them. Problems found here and those the API named sit beside each field.

import type { TenantDraft } from "../operator";

type Key = keyof TenantDraft;

const FIELDS: { key: Key; label: string; help: string; inputMode?: "numeric" | "decimal" }[] = [
  { key: "max_clusters", label: "Clusters", help: "How many clusters it may have (deleted ones do not count). Empty: the platform default.", inputMode: "numeric" },
  { key: "max_open_operations", label: "Open operations", help: "Operations queued or running at most. Empty: the platform default.", inputMode: "numeric" },
  { key: "max_concurrent_operations", label: "Operations at once", help: "How many of its operations may run at the same time. Empty: the platform default.", inputMode: "numeric" },
  { key: "monthly_budget", label: "Monthly budget (USD)", help: "An apply whose estimate would take the tenant over it stops before apply. Empty: no budget.", inputMode: "decimal" },
  { key: "max_ttl_hours", label: "Longest lifetime (hours)", help: "The longest any of its clusters may live. Empty: the platform default.", inputMode: "numeric" },
];

export function TenantFields(props: {
  prefix: string;
  draft: TenantDraft;
  errors: Record<string, string[]>;
  apiErrors: Record<string, string[]>;
  onChange(d: TenantDraft): void;
}) {
  const { prefix, draft, errors, apiErrors, onChange } = props;
  const messages = (k: Key) => [...(errors[k] ?? []), ...(apiErrors[k] ?? [])];
  return (
    <div class="fields">
      {FIELDS.map(({ key, label, help, inputMode }) => {
        const id = `${prefix}-${key}`;
        const bad = messages(key);
        return (
          <div class={`field${bad.length ? " invalid" : ""}`} key={key}>
            <label for={id}>{label}</label>
            <input type="text" id={id} name={key} inputMode={inputMode} value={draft[key]} aria-invalid={bad.length ? "true" : undefined}
              aria-describedby={`${id}-msg`} onInput={(e) => onChange({ ...draft, [key]: (e.target as HTMLInputElement).value })} />
            <div id={`${id}-msg`} class="help">
              {help}
              {bad.map((m) => <div class="error" role="alert" key={m}>{m}</div>)}
            </div>
          </div>
        );
      })}
      <div class={`field${apiErrors.approval ? " invalid" : ""}`}>
        <label for={`${prefix}-approval`}>Plan approval</label>
        <select id={`${prefix}-approval`} name="approval" value={draft.approval} aria-describedby={`${prefix}-approval-msg`}
          onChange={(e) => onChange({ ...draft, approval: (e.target as HTMLSelectElement).value as TenantDraft["approval"] })}>
          <option value="">Platform default (applied without approval)</option>
          <option value="auto">Applied without approval</option>
          <option value="required">An approver must approve each plan</option>
        </select>
        <div id={`${prefix}-approval-msg`} class="help">
          The default for its new clusters.
          {(apiErrors.approval ?? []).map((m) => <div class="error" key={m}>{m}</div>)}
        </div>
      </div>
    </div>
  );
}

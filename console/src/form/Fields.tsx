// Inputs generated from field models: text/password/number/select/checkbox, list and map editors. Every
// input has a label; the description, client-side problems and the API's errors (with `allowed`) are tied
// to it with aria-describedby, and aria-invalid is set while anything is wrong.

import type { FieldError, FieldModel, RawValue } from "./schema";
import { fieldLabel, oneError, patternSentence } from "./words";

export interface FieldProps {
  field: FieldModel;
  value: RawValue;
  onChange(v: RawValue): void;
  problems: string[];
  apiErrors: FieldError[];
  idPrefix?: string;
  placeholderFromDefault?: boolean;
}

export function fieldId(prefix: string, path: string): string {
  return `${prefix}${path.replace(/[^a-zA-Z0-9_-]/g, "-")}`;
}

/** The help line and the field's one message (see `oneError`: the API's answer, else the first problem). */
export function FieldMessages(props: { id: string; description?: string; problems: string[]; apiErrors: FieldError[]; extra?: string; title?: string }) {
  const err = oneError(props.problems, props.apiErrors);
  return (
    <>
      {props.description || props.extra ? (
        <p class="help" id={`${props.id}-help`} title={props.title}>
          {props.description}
          {props.extra ? <span class="constraints">{props.description ? " · " : ""}{props.extra}</span> : null}
        </p>
      ) : null}
      {err ? (
        <p class="field-error" id={`${props.id}-err`}>
          {err.field && err.field.split(".").length > 2 ? <code>{err.field.split(".").slice(2).join(".")}</code> : null}
          {err.field && err.field.split(".").length > 2 ? ": " : null}
          {err.text}
          {err.allowed ? <span class="allowed"> — allowed: {err.allowed}</span> : null}
        </p>
      ) : null}
    </>
  );
}

export function describedBy(id: string, hasHelp: boolean, hasErr: boolean): string | undefined {
  const ids = [hasHelp ? `${id}-help` : "", hasErr ? `${id}-err` : ""].filter(Boolean).join(" ");
  return ids || undefined;
}

/** Limits in words: "1–100 · default 2 · variable node_count". Patterns as sentences (the regex in a title). */
function constraints(f: FieldModel): string {
  const parts: string[] = [];
  if (f.min !== undefined && f.max !== undefined) parts.push(`${f.min}–${f.max}`);
  else if (f.min !== undefined) parts.push(`at least ${f.min}`);
  else if (f.max !== undefined) parts.push(`at most ${f.max}`);
  if (f.pattern || f.expected) parts.push(`${f.kind === "list" ? "each item " : ""}${patternSentence(f.pattern, f.expected)}`);
  if (f.maxLength !== undefined) parts.push(`up to ${f.maxLength} characters`);
  if (f.default !== undefined && !f.sensitive && f.kind !== "bool" && !(Array.isArray(f.default) && f.default.length === 0) && !(typeof f.default === "object" && f.default && Object.keys(f.default).length === 0))
    parts.push(`default ${typeof f.default === "string" ? f.default : Array.isArray(f.default) ? f.default.join(", ") : JSON.stringify(f.default)}`);
  parts.push(`variable ${f.name}`);
  return parts.join(" · ");
}

export function VariableField({ field: f, value, onChange, problems, apiErrors, idPrefix = "v-" }: FieldProps) {
  const id = fieldId(idPrefix, f.path);
  const extra = constraints(f);
  const hasHelp = true;
  const label = fieldLabel(f);
  const title = f.pattern ? `Pattern: ${f.pattern}` : undefined;
  const invalid = problems.length + apiErrors.length > 0;
  const aria = { "aria-describedby": describedBy(id, hasHelp, invalid), "aria-invalid": invalid ? ("true" as const) : undefined };
  const val = (e: Event) => (e.target as HTMLInputElement).value;
  let input;
  switch (f.kind) {
    case "bool":
      return (
        <div class={`field field-bool${invalid ? " invalid" : ""}`}>
          <input id={id} type="checkbox" checked={value as boolean} onChange={(e) => onChange((e.target as HTMLInputElement).checked)} {...aria} />
          <label for={id}>{label}</label>
          <FieldMessages id={id} description={f.description} problems={problems} apiErrors={apiErrors} extra={extra} title={title} />
        </div>
      );
    case "select":
    case "text":
      if (f.kind === "text" && !f.choices?.length) {
        input = (
          <input id={id} type="text" autoComplete="off" required={f.required} maxLength={f.maxLength} value={value as string} onInput={(e) => onChange(val(e))} {...aria} />
        );
        break;
      }
      input = (
        <select id={id} value={value as string} required={f.required} onChange={(e) => onChange(val(e))} {...aria}>
          {f.required ? null : <option value="">(default)</option>}
          {f.choices?.length
            ? [
                ...(f.choices.some((c) => c.value === value) || value === "" ? [] : [<option value={value as string}>{value as string} (not in the catalog)</option>]),
                ...f.choices.map((c) => <option value={c.value}>{c.label}</option>),
              ]
            : (f.options ?? []).map((o) => <option value={o}>{o}</option>)}
        </select>
      );
      break;
    case "number":
    case "integer":
      input = (
        <input
          id={id}
          type="number"
          inputMode={f.kind === "integer" ? "numeric" : "decimal"}
          step={f.kind === "integer" ? 1 : "any"}
          min={f.min}
          max={f.max}
          required={f.required}
          value={value as string}
          onInput={(e) => onChange(val(e))}
          {...aria}
        />
      );
      break;
    case "list":
      input = <ListEditor id={id} name={label} items={value as string[]} onChange={onChange} aria={aria} />;
      break;
    case "map":
      input = <MapEditor id={id} name={label} entries={value as [string, string][]} onChange={onChange} aria={aria} />;
      break;
    case "password":
      input = (
        <input
          id={id}
          type="password"
          autoComplete="new-password"
          required={f.required}
          maxLength={f.maxLength}
          value={value as string}
          placeholder={f.default === "(sensitive)" ? "(unchanged)" : undefined}
          onInput={(e) => onChange(val(e))}
          {...aria}
        />
      );
      break;
    default:
      input = (
        <input
          id={id}
          type="text"
          autoComplete="off"
          required={f.required}
          maxLength={f.maxLength}
          value={value as string}
          onInput={(e) => onChange(val(e))}
          {...aria}
        />
      );
  }
  const group = f.kind === "list" || f.kind === "map";
  return (
    <div class={`field${invalid ? " invalid" : ""}`} role={group ? "group" : undefined} aria-labelledby={group ? `${id}-label` : undefined}>
      {group ? (
        <span class="label" id={`${id}-label`}>
          {label}
        </span>
      ) : (
        <label for={id}>{label}</label>
      )}
      {f.required ? <span class="req"> required</span> : null}
      {f.sensitive ? <span class="req"> sensitive</span> : null}
      {input}
      <FieldMessages id={id} description={f.description} problems={problems} apiErrors={apiErrors} extra={extra} title={title} />
    </div>
  );
}

type Aria = { "aria-describedby"?: string; "aria-invalid"?: "true" };

function ListEditor(props: { id: string; name: string; items: string[]; onChange(v: string[]): void; aria: Aria }) {
  const { id, name, items, onChange } = props;
  return (
    <div class="editor" id={id} {...props.aria}>
      {items.map((v, i) => (
        <div class="row">
          <label class="sr-only" for={`${id}-${i}`}>
            {name} item {i + 1}
          </label>
          <input id={`${id}-${i}`} type="text" value={v} onInput={(e) => onChange(items.map((x, j) => (j === i ? (e.target as HTMLInputElement).value : x)))} />
          <button type="button" class="secondary" aria-label={`Remove ${name} item ${i + 1}`} onClick={() => onChange(items.filter((_, j) => j !== i))}>
            Remove
          </button>
        </div>
      ))}
      <button type="button" class="secondary" aria-label={`Add item to ${name}`} onClick={() => onChange([...items, ""])}>
        Add item
      </button>
    </div>
  );
}

function MapEditor(props: { id: string; name: string; entries: [string, string][]; onChange(v: [string, string][]): void; aria: Aria }) {
  const { id, name, entries, onChange } = props;
  const set = (i: number, k: 0 | 1, v: string) =>
    onChange(entries.map((e, j) => (j === i ? ((k === 0 ? [v, e[1]] : [e[0], v]) as [string, string]) : e)));
  return (
    <div class="editor" id={id} {...props.aria}>
      {entries.map(([k, v], i) => (
        <div class="row">
          <label class="sr-only" for={`${id}-${i}-k`}>
            {name} key {i + 1}
          </label>
          <input id={`${id}-${i}-k`} type="text" placeholder="key" value={k} onInput={(e) => set(i, 0, (e.target as HTMLInputElement).value)} />
          <label class="sr-only" for={`${id}-${i}-v`}>
            {name} value {i + 1}
          </label>
          <input id={`${id}-${i}-v`} type="text" placeholder="value" value={v} onInput={(e) => set(i, 1, (e.target as HTMLInputElement).value)} />
          <button type="button" class="secondary" aria-label={`Remove ${name} entry ${i + 1}`} onClick={() => onChange(entries.filter((_, j) => j !== i))}>
            Remove
          </button>
        </div>
      ))}
      <button type="button" class="secondary" aria-label={`Add entry to ${name}`} onClick={() => onChange([...entries, ["", ""]])}>
        Add entry
      </button>
    </div>
  );
}

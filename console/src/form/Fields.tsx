// Inputs generated from field models: text/password/number/select/checkbox, list and map editors. Every
// input has a label; the description, client-side problems and the API's errors (with `allowed`) are tied
// to it with aria-describedby, and aria-invalid is set while anything is wrong.

import type { FieldError, FieldModel, RawValue } from "./schema";

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

export function FieldMessages(props: { id: string; description?: string; problems: string[]; apiErrors: FieldError[]; extra?: string }) {
  return (
    <>
      {props.description || props.extra ? (
        <p class="help" id={`${props.id}-help`}>
          {props.description}
          {props.extra ? <span class="constraints"> {props.extra}</span> : null}
        </p>
      ) : null}
      {props.problems.length || props.apiErrors.length ? (
        <ul class="field-errors" id={`${props.id}-err`}>
          {props.problems.map((p) => (
            <li>{p}</li>
          ))}
          {props.apiErrors.map((e) => (
            <li>
              {e.field.includes(".") && e.field.split(".").length > 2 ? <code>{e.field}</code> : null} {e.problem}
              {e.allowed ? <span class="allowed"> — allowed: {e.allowed}</span> : null}
            </li>
          ))}
        </ul>
      ) : null}
    </>
  );
}

export function describedBy(id: string, hasHelp: boolean, hasErr: boolean): string | undefined {
  const ids = [hasHelp ? `${id}-help` : "", hasErr ? `${id}-err` : ""].filter(Boolean).join(" ");
  return ids || undefined;
}

function constraints(f: FieldModel): string {
  const parts: string[] = [];
  if (f.min !== undefined && f.max !== undefined) parts.push(`${f.min}–${f.max}`);
  else if (f.min !== undefined) parts.push(`at least ${f.min}`);
  else if (f.max !== undefined) parts.push(`at most ${f.max}`);
  if (f.pattern) parts.push(`pattern ${f.pattern}`);
  if (f.maxLength !== undefined) parts.push(`max ${f.maxLength} characters`);
  if (f.catalog) parts.push(`from the ${f.catalog} catalog`);
  if (f.default !== undefined && !f.sensitive) parts.push(`default ${JSON.stringify(f.default)}`);
  return parts.length ? `(${parts.join("; ")})` : "";
}

export function VariableField({ field: f, value, onChange, problems, apiErrors, idPrefix = "v-" }: FieldProps) {
  const id = fieldId(idPrefix, f.path);
  const extra = constraints(f);
  const hasHelp = !!(f.description || extra);
  const invalid = problems.length + apiErrors.length > 0;
  const aria = { "aria-describedby": describedBy(id, hasHelp, invalid), "aria-invalid": invalid ? ("true" as const) : undefined };
  const val = (e: Event) => (e.target as HTMLInputElement).value;
  let input;
  switch (f.kind) {
    case "bool":
      return (
        <div class={`field field-bool${invalid ? " invalid" : ""}`}>
          <input id={id} type="checkbox" checked={value as boolean} onChange={(e) => onChange((e.target as HTMLInputElement).checked)} {...aria} />
          <label for={id}>{f.name}</label>
          <FieldMessages id={id} description={f.description} problems={problems} apiErrors={apiErrors} extra={extra} />
        </div>
      );
    case "select":
      input = (
        <select id={id} value={value as string} required={f.required} onChange={(e) => onChange(val(e))} {...aria}>
          {f.required ? null : <option value="">(default)</option>}
          {(f.options ?? []).map((o) => (
            <option value={o}>{o}</option>
          ))}
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
      input = <ListEditor id={id} name={f.name} items={value as string[]} onChange={onChange} aria={aria} />;
      break;
    case "map":
      input = <MapEditor id={id} name={f.name} entries={value as [string, string][]} onChange={onChange} aria={aria} />;
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
          {f.name}
        </span>
      ) : (
        <label for={id}>{f.name}</label>
      )}
      {f.required ? <span class="req"> required</span> : null}
      {f.sensitive ? <span class="req"> sensitive</span> : null}
      {input}
      <FieldMessages id={id} description={f.description} problems={problems} apiErrors={apiErrors} extra={extra} />
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
      <button type="button" class="secondary" onClick={() => onChange([...items, ""])}>
        Add {name} item
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
      <button type="button" class="secondary" onClick={() => onChange([...entries, ["", ""]])}>
        Add {name} entry
      </button>
    </div>
  );
}

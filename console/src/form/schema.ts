// Form generation from a template's variable schema (GET /v1/templates/{name}): field models, initial
// values (template default, then the provider's defaults), client-side validation mirroring the API's
// (shared/domain/src/template.rs: anchored patterns, min/max, integer, max_length, rules), the request's
// `variables`, and mapping problem+json field errors (`variables.tags.env`) to inputs.

import { patternSentence } from "./words";
import type { FieldError } from "./fieldError";

export type VarType = "string" | "number" | "integer" | "bool" | "list(string)" | "map(string)";

export interface VariableSpec {
  type: string;
  description: string;
  required: boolean;
  sensitive: boolean;
  default?: unknown;
  enum?: unknown[] | null;
  min?: number | null;
  max?: number | null;
  pattern?: string | null;
  max_length?: number | null;
  catalog?: string | null;
  format?: string | null;
  expected?: string | null;
  section?: string | null;
  label?: string | null;
}

export interface Rule {
  left: string;
  op: string;
  right: string;
  message?: string;
}

export interface TemplateDetailLike {
  name: string;
  version: string;
  variables: Record<string, VariableSpec>;
  rules: unknown[];
  defaults: Record<string, { region?: string | null; variables: Record<string, unknown> }>;
}

export type Kind = "text" | "password" | "number" | "integer" | "bool" | "select" | "list" | "map";

export interface FieldModel {
  name: string;
  /** The problem+json `field` path. */
  path: string;
  kind: Kind;
  type: string;
  description: string;
  required: boolean;
  sensitive: boolean;
  options?: string[];
  min?: number;
  max?: number;
  pattern?: string;
  maxLength?: number;
  catalog?: string;
  /** What a value must look like, in words (the API's `expected`, from a `format`). */
  expected?: string;
  /** The template's form section and label for the variable, when it names them. */
  section?: string;
  label?: string;
  /** Offered values with labels (a catalog's regions or instance types); a select when set. */
  choices?: { value: string; label: string }[];
  /** The effective default (provider default over template default), as the API would apply it. */
  default?: unknown;
}

/** What an input holds while editing. */
export type RawValue = string | boolean | string[] | [string, string][];

export const SENSITIVE_MASK = "(sensitive)";

function kindOf(spec: VariableSpec): Kind {
  if (spec.enum && spec.enum.length) return "select";
  switch (spec.type) {
    case "number":
      return "number";
    case "integer":
      return "integer";
    case "bool":
      return "bool";
    case "list(string)":
      return "list";
    case "map(string)":
      return "map";
    default:
      return spec.sensitive ? "password" : "text";
  }
}

/** One field per variable: required first, then by name. */
export function fieldsFromTemplate(t: TemplateDetailLike, provider: string): FieldModel[] {
  const pdefs = t.defaults?.[provider]?.variables ?? {};
  return Object.entries(t.variables)
    .map(([name, spec]): FieldModel => {
      const dflt = name in pdefs ? pdefs[name] : spec.default;
      return {
        name,
        path: `variables.${name}`,
        kind: kindOf(spec),
        type: spec.type,
        description: spec.description,
        required: spec.required,
        sensitive: spec.sensitive,
        options: spec.enum?.map(String),
        min: spec.min ?? undefined,
        max: spec.max ?? undefined,
        pattern: spec.pattern ?? undefined,
        maxLength: spec.max_length ?? undefined,
        catalog: spec.catalog ?? undefined,
        expected: spec.expected ?? undefined,
        section: spec.section ?? undefined,
        label: spec.label ?? undefined,
        default: dflt,
      };
    })
    .sort((a, b) => Number(b.required) - Number(a.required) || a.name.localeCompare(b.name));
}

/** The input's starting value: the default, or empty. A masked sensitive default starts empty. */
export function initialValue(f: FieldModel): RawValue {
  const d = f.default;
  const hidden = d === SENSITIVE_MASK;
  switch (f.kind) {
    case "bool":
      return d === true;
    case "list":
      return Array.isArray(d) ? d.map(String) : [];
    case "map":
      return d && typeof d === "object" && !Array.isArray(d)
        ? Object.entries(d as Record<string, unknown>).map(([k, v]) => [k, String(v)] as [string, string])
        : [];
    default:
      return d === undefined || d === null || hidden ? "" : String(d);
  }
}

function patternRe(p: string): RegExp | null {
  try {
    return new RegExp(`^(?:${p})$`, "u");
  } catch {
    return null; // a pattern JS cannot compile: the API still checks it
  }
}

function checkString(f: FieldModel, v: string, what: string): string[] {
  if (f.choices && f.choices.length && v !== "" && !f.choices.some((c) => c.value === v)) return [`${what} is not one of the offered values`];
  const out: string[] = [];
  if (f.maxLength !== undefined && [...v].length > f.maxLength) out.push(`${what} is longer than ${f.maxLength} characters`);
  if (f.pattern) {
    const re = patternRe(f.pattern);
    if (re && !re.test(v)) out.push(`${what} must be ${patternSentence(f.pattern, f.expected)}`);
  }
  return out;
}

/** Whether the field holds nothing (an unset optional field is left to its default). */
export function isEmpty(f: FieldModel, raw: RawValue): boolean {
  if (f.kind === "bool") return false;
  if (f.kind === "list" || f.kind === "map") return (raw as unknown[]).length === 0 && f.default === undefined;
  return raw === "";
}

/** Problems with one field's value, as the user types. */
export function validateField(f: FieldModel, raw: RawValue): string[] {
  if (f.kind === "list" || f.kind === "map") {
    const out: string[] = [];
    if (f.required && (raw as unknown[]).length === 0) out.push("required");
    if (f.kind === "list") {
      (raw as string[]).forEach((v, i) => out.push(...checkString(f, v, `item ${i + 1}`)));
    } else {
      const seen = new Set<string>();
      for (const [k, v] of raw as [string, string][]) {
        if (!k) out.push("every entry needs a key");
        else if (seen.has(k)) out.push(`key "${k}" appears twice`);
        seen.add(k);
        out.push(...checkString(f, v, k ? `"${k}"` : "value"));
      }
    }
    return out;
  }
  if (f.kind === "bool") return [];
  const v = raw as string;
  if (v === "") return f.required ? ["required"] : [];
  if (f.kind === "select") return f.options && !f.options.includes(v) ? [`must be one of ${f.options.join(", ")}`] : [];
  if (f.kind === "number" || f.kind === "integer") {
    const n = Number(v);
    if (v.trim() === "" || !Number.isFinite(n)) return ["must be a number"];
    const out: string[] = [];
    if (f.kind === "integer" && !Number.isInteger(n)) out.push("must be a whole number");
    if (f.min !== undefined && n < f.min) out.push(`must be at least ${f.min}`);
    if (f.max !== undefined && n > f.max) out.push(`must be at most ${f.max}`);
    return out;
  }
  return checkString(f, v, "value");
}

/** The typed value of a field for the request (undefined: leave it out). */
export function toValue(f: FieldModel, raw: RawValue): unknown {
  switch (f.kind) {
    case "bool":
      return raw as boolean;
    case "number":
    case "integer":
      return raw === "" ? undefined : Number(raw);
    case "list":
      return raw as string[];
    case "map":
      return Object.fromEntries(raw as [string, string][]);
    case "select": {
      if (raw === "") return undefined;
      // An enum of numbers stays numeric.
      return f.type === "number" || f.type === "integer" ? Number(raw) : raw;
    }
    default:
      return raw === "" ? undefined : raw;
  }
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The request's `variables`: every value that differs from its default (required ones always). */
export function buildVariables(fields: FieldModel[], values: Record<string, RawValue>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = toValue(f, values[f.name] ?? initialValue(f));
    if (v === undefined) continue;
    if (!f.required && f.default !== undefined && same(v, f.default)) continue;
    out[f.name] = v;
  }
  return out;
}

const OPS: Record<string, (l: number, r: number) => boolean> = {
  ">=": (l, r) => l >= r,
  ">": (l, r) => l > r,
  "<=": (l, r) => l <= r,
  "<": (l, r) => l < r,
  "==": (l, r) => l === r,
  "!=": (l, r) => l !== r,
};

export function asRules(rules: unknown[]): Rule[] {
  return rules.filter(
    (r): r is Rule =>
      !!r && typeof r === "object" && typeof (r as Rule).left === "string" && typeof (r as Rule).right === "string" && typeof (r as Rule).op === "string",
  );
}

export function describeRule(r: Rule): string {
  return r.message ?? `${r.left} ${r.op} ${r.right}`;
}

/** Broken cross-variable rules, by the left variable's path. */
export function checkRules(rules: Rule[], fields: FieldModel[], values: Record<string, RawValue>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const num = (name: string): number | undefined => {
    const f = fields.find((x) => x.name === name);
    if (!f) return undefined;
    const v = toValue(f, values[name] ?? initialValue(f));
    const n = v === undefined ? Number(f.default) : Number(v);
    return Number.isFinite(n) ? n : undefined;
  };
  for (const r of rules) {
    const l = num(r.left);
    const rt = num(r.right);
    const op = OPS[r.op];
    if (l === undefined || rt === undefined || !op) continue;
    if (!op(l, rt)) (out[`variables.${r.left}`] ??= []).push(describeRule(r));
  }
  return out;
}

export type { FieldError } from "./fieldError";

/**
 * Assigns each API field error to the longest known path that is the error's field or a prefix of it
 * (`variables.tags.env` → `variables.tags`); the rest are unmatched (shown above the form).
 */
export function mapFieldErrors(errors: FieldError[] | undefined, paths: string[]): { byPath: Record<string, FieldError[]>; unmatched: FieldError[] } {
  const byPath: Record<string, FieldError[]> = {};
  const unmatched: FieldError[] = [];
  const sorted = [...paths].sort((a, b) => b.length - a.length);
  for (const e of errors ?? []) {
    const p = sorted.find((p) => e.field === p || e.field.startsWith(p + ".") || e.field.startsWith(p + "["));
    if (p) (byPath[p] ??= []).push(e);
    else unmatched.push(e);
  }
  return { byPath, unmatched };
}

/** The create form's own fields. */
export const NAME_PATTERN = "[a-z][a-z0-9-]{1,38}[a-z0-9]";

export function validateName(v: string): string[] {
  if (!v) return ["required"];
  return new RegExp(`^${NAME_PATTERN}$`).test(v)
    ? []
    : ["3-40 characters of a-z, 0-9 and '-', starting with a letter and not ending with '-'"];
}

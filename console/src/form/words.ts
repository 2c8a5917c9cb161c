// Words for what the schema says in code: a variable's name as a label ("vpc_cidr" → "VPC CIDR"), a
// pattern as a sentence ("an IPv4 network in CIDR form, like 10.0.0.0/16"), and the one message a field
// shows (the API's answer for the value sent, else the first problem found while typing).

import type { FieldError } from "./fieldError";

const WORDS: Record<string, string> = {
  api: "API", az: "AZ", azs: "AZs", cidr: "CIDR", cidrs: "CIDRs", dns: "DNS", eks: "EKS", gb: "GB", gib: "GiB", http: "HTTP",
  https: "HTTPS", iam: "IAM", id: "ID", ids: "IDs", ip: "IP", ips: "IPs", k8s: "Kubernetes", kms: "KMS", nat: "NAT", ssh: "SSH",
  tls: "TLS", ttl: "TTL", url: "URL", vpc: "VPC", cpu: "CPU", os: "OS",
};

// Names whose word-by-word reading says less than it could.
const LABELS: Record<string, string> = {
  az_count: "Availability zones",
  node_count: "Number of nodes",
  min_nodes: "Minimum nodes",
  max_nodes: "Maximum nodes",
  node_disk_size: "Node disk size (GiB)",
  node_instance_type: "Node size",
  endpoint_public_access: "Public API endpoint",
  public_access_cidrs: "Networks allowed to reach the public endpoint",
  admin_cidrs: "Admin networks",
};

/** A variable's value as people read it: on/off, lists and maps without JSON brackets, "none" when empty. */
export function valueText(v: unknown): string {
  if (v === undefined || v === null) return "—";
  if (typeof v === "boolean") return v ? "on" : "off";
  if (typeof v === "string") return v;
  if (Array.isArray(v)) return v.length ? v.map((x) => (typeof x === "string" ? x : JSON.stringify(x))).join(", ") : "none";
  if (typeof v === "object") {
    const e = Object.entries(v as Record<string, unknown>);
    return e.length ? e.map(([k, x]) => `${k} = ${typeof x === "string" ? x : JSON.stringify(x)}`).join(", ") : "none";
  }
  return String(v);
}

/** What a form calls a field: the template's label, else its name in words. */
export function fieldLabel(f: { name: string; label?: string }): string {
  return f.label?.trim() || humanLabel(f.name);
}

/** A variable's name as people read it: `node_instance_type` → "Node instance type", `vpc_cidr` → "VPC CIDR". */
export function humanLabel(name: string): string {
  if (LABELS[name]) return LABELS[name];
  const words = name.split(/[_\-\s]+/).filter(Boolean).map((w) => WORDS[w.toLowerCase()] ?? w.toLowerCase());
  if (!words.length) return name;
  const [first, ...rest] = words;
  return [first === first.toLowerCase() ? first[0].toUpperCase() + first.slice(1) : first, ...rest].join(" ");
}

const OCTET = String.raw`\d{1,3}`;
const IPV4 = [OCTET, OCTET, OCTET, OCTET].join(String.raw`\.`);

/**
 * A pattern (anchored by the API) in words, or null when it has no reading here (the form then says "in
 * the format the template requires" and keeps the pattern out of sight). `expected` (the API's words for a
 * `format`) wins.
 */
export function describePattern(pattern: string | undefined, expected?: string | null): string | null {
  if (expected) return expected;
  if (!pattern) return null;
  let p = pattern.trim();
  let orEmpty = false;
  const opt = /^\((.*)\)\?$/.exec(p);
  if (opt) {
    p = opt[1];
    orEmpty = true;
  }
  const tail = orEmpty ? ", or empty" : "";
  let m: RegExpExecArray | null;
  if ((m = /^\.\{(\d+),\}$/.exec(p))) return `at least ${m[1]} characters${tail}`;
  if ((m = /^\.\{(\d+),(\d+)\}$/.exec(p))) return `${m[1]} to ${m[2]} characters${tail}`;
  if (p.includes("@") && /\[\^@/.test(p)) return `an email address, like ops@example.com${tail}`;
  if (p === `${IPV4}/\\d{1,2}`) return `an IPv4 network in CIDR form, like 10.0.0.0/16${tail}`;
  if (p === IPV4) return `an IPv4 address, like 10.0.0.1${tail}`;
  if ((m = /^10\\\.\\d\{1,3\}\\\.0\\\.0\/(\d+)$/.exec(p))) return `a /${m[1]} network inside 10.0.0.0/8, like 10.0.0.0/${m[1]}${tail}`;
  if (p.startsWith("[a-z][a-z0-9")) return `lower-case letters, digits and '-', starting with a letter${tail}`;
  if (/^[A-Za-z0-9_.-]+(\|[A-Za-z0-9_.-]+)+$/.test(p)) return `one of ${p.split("|").join(", ")}${tail}`;
  return null;
}

/** What a field says about its pattern: the words, else a neutral sentence (the pattern itself goes in a title). */
export function patternSentence(pattern: string | undefined, expected?: string | null): string {
  return describePattern(pattern, expected) ?? "in the format the template requires";
}

/**
 * The one message a field shows: the API's answer (it judged the value sent, and says what is allowed)
 * when there is one, else the first problem found while typing; with how many more there are.
 */
export function oneError(problems: readonly string[], apiErrors: readonly FieldError[]): { text: string; allowed?: string; field?: string } | null {
  if (apiErrors.length) {
    const e = apiErrors[0];
    const more = apiErrors.length - 1;
    return { text: `${e.problem}${more ? ` (and ${more} more)` : ""}`, allowed: e.allowed || undefined, field: e.field };
  }
  if (problems.length) {
    const more = problems.length - 1;
    return { text: `${problems[0]}${more ? ` (and ${more} more)` : ""}` };
  }
  return null;
}

// A reader for the provider catalog files' TOML: top-level `key = value` lines and `[[regions]]` /
// `[[instance_types]]` tables of strings, numbers and string arrays (what those files use; anything else
// is ignored). Kept apart from catalog.ts so the unit tests read the real files with node's fs.

export interface Region { id: string; name: string; zones: string[] }
export interface InstanceType { name: string; vcpu: number; memory_gib: number; family: string }
export interface ProviderCatalog { provider: string; display_name: string; kubernetes_versions: string[]; regions: Region[]; instance_types: InstanceType[] }

function value(raw: string): unknown {
  const v = raw.trim();
  if (v.startsWith('"')) return JSON.parse(v);
  if (v.startsWith("[")) return [...v.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => JSON.parse(`"${m[1]}"`));
  const n = Number(v);
  return Number.isFinite(n) ? n : v;
}

export function parseCatalog(text: string): ProviderCatalog {
  const top: Record<string, unknown> = {};
  const tables: Record<string, Record<string, unknown>[]> = { regions: [], instance_types: [] };
  let cur: Record<string, unknown> | null = null;
  for (const line of text.split("\n")) {
    const l = line.replace(/\s+#.*$/, "").trim();
    if (!l || l.startsWith("#")) continue;
    const t = /^\[\[(\w+)\]\]$/.exec(l);
    if (t) {
      cur = {};
      (tables[t[1]] ??= []).push(cur);
      continue;
    }
    const kv = /^(\w+)\s*=\s*(.+)$/.exec(l);
    if (kv) (cur ?? top)[kv[1]] = value(kv[2]);
  }
  return {
    provider: String(top.provider ?? ""),
    display_name: String(top.display_name ?? top.provider ?? ""),
    kubernetes_versions: (top.kubernetes_versions as string[]) ?? [],
    regions: tables.regions.map((r) => ({ id: String(r.id), name: String(r.name ?? r.id), zones: (r.zones as string[]) ?? [] })),
    instance_types: tables.instance_types.map((i) => ({
      name: String(i.name), vcpu: Number(i.vcpu), memory_gib: Number(i.memory_gib), family: String(i.family ?? ""),
    })),
  };
}

/** "t3.medium — 2 vCPU, 4 GiB (burstable)" */
export function instanceLabel(i: InstanceType): string {
  return `${i.name} — ${i.vcpu} vCPU, ${i.memory_gib} GiB${i.family ? ` (${i.family})` : ""}`;
}

/** "us-east-1 — US East (N. Virginia)" */
export function regionLabel(r: Region): string {
  return r.name && r.name !== r.id ? `${r.id} — ${r.name}` : r.id;
}

// The create and update forms in sections: the template's own (a variable's `section` in the schema) where
// it names one, else what the variable's name says it configures: the Kubernetes control plane, the nodes,
// the network, add-ons, tags, the rest.

import type { FieldModel } from "./schema";

export interface Section {
  id: string;
  title: string;
  help: string;
  fields: FieldModel[];
}

const SECTIONS: { id: string; title: string; help: string; test: RegExp }[] = [
  { id: "cluster", title: "Kubernetes", help: "The control plane: its version and who can reach its API.", test: /kubernetes|k8s|endpoint|public_access|control_plane|cluster_version/ },
  { id: "nodes", title: "Nodes", help: "The worker nodes: how many, how big, how they are bought.", test: /node|instance|capacity|disk|spot/ },
  { id: "network", title: "Network", help: "The VPC, its subnets and zones, and what may reach it.", test: /cidr|vpc|subnet|^az_|_az$|_azs?_|zone|nat|network|dns/ },
  { id: "addons", title: "Add-ons", help: "What is installed into the cluster after it is up.", test: /ingress|cert_manager|letsencrypt|monitoring|grafana|prometheus|logging|addon|_enabled$/ },
  { id: "tags", title: "Tags", help: "Labels added to the cloud resources.", test: /^tags$|_tags$|labels/ },
];

const OTHER = { id: "other", title: "Other settings", help: "" };

/** The section a variable belongs to by its name (the first whose words its name contains). */
export function sectionOf(name: string): string {
  return SECTIONS.find((s) => s.test.test(name))?.id ?? OTHER.id;
}

/** The title of a field's section: the template's, else the one its name suggests. */
function titleOf(f: FieldModel): string {
  if (f.section?.trim()) return f.section.trim();
  const id = sectionOf(f.name);
  return (SECTIONS.find((s) => s.id === id) ?? OTHER).title;
}

// Within a section: required first, then the usual reading order of the common variables, then by name.
const RANK = [
  "kubernetes_version", "endpoint_public_access", "public_access_cidrs",
  "node_count", "node_instance_type", "min_nodes", "max_nodes", "node_disk_size", "capacity_type",
  "vpc_cidr", "az_count", "nat_gateway", "admin_cidrs",
];
const rank = (n: string) => (RANK.includes(n) ? RANK.indexOf(n) : RANK.length);

/**
 * Fields in sections (empty ones left out): the known sections in the order above, then the template's
 * other sections in the order their first variable (by name) comes, "Other settings" last; required
 * fields first within one.
 */
export function groupFields(fields: readonly FieldModel[]): Section[] {
  const titles: string[] = [];
  for (const f of fields) if (!titles.includes(titleOf(f))) titles.push(titleOf(f));
  const known = SECTIONS.map((s) => s.title);
  titles.sort((a, b) => {
    const ka = a === OTHER.title ? 1e9 : known.includes(a) ? known.indexOf(a) : known.length + titles.indexOf(a);
    const kb = b === OTHER.title ? 1e9 : known.includes(b) ? known.indexOf(b) : known.length + titles.indexOf(b);
    return ka - kb;
  });
  return titles.map((title) => {
    const s = [...SECTIONS, OTHER].find((x) => x.title === title);
    return {
      id: s?.id ?? title.toLowerCase().replace(/[^a-z0-9]+/g, "-"),
      title,
      help: s?.help ?? "",
      fields: fields.filter((f) => titleOf(f) === title).sort((a, b) => Number(b.required) - Number(a.required) || rank(a.name) - rank(b.name) || a.name.localeCompare(b.name)),
    };
  });
}

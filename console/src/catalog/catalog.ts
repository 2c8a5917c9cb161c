// The provider catalogs (regions, instance types and Kubernetes versions Strato offers per cloud) for the create form's
// selects. The API has no catalog endpoint; the console bundles the same data files the API validates
// against (shared/domain/catalog/providers/*.toml, read at build time), so a select offers exactly what
// the API accepts from that release.

import aws from "../../../shared/domain/catalog/providers/aws.toml?raw";
import azure from "../../../shared/domain/catalog/providers/azure.toml?raw";
import digitalocean from "../../../shared/domain/catalog/providers/digitalocean.toml?raw";
import gcp from "../../../shared/domain/catalog/providers/gcp.toml?raw";
import linode from "../../../shared/domain/catalog/providers/linode.toml?raw";
import { instanceLabel, parseCatalog, regionLabel, type ProviderCatalog } from "./parse";

export type { InstanceType, ProviderCatalog, Region } from "./parse";
export { instanceLabel, regionLabel } from "./parse";

const ALL: Record<string, ProviderCatalog> = {};
for (const text of [aws, azure, digitalocean, gcp, linode]) {
  const c = parseCatalog(text);
  ALL[c.provider] = c;
}

export function catalogOf(provider: string): ProviderCatalog | undefined {
  return ALL[provider];
}

/** Fields whose values come from a catalog get its entries as labelled choices (a select). */
export function withCatalog<F extends { catalog?: string; choices?: { value: string; label: string }[] }>(fields: F[], provider: string): F[] {
  const c = catalogOf(provider);
  if (!c) return fields;
  return fields.map((f) =>
    f.catalog === "instance_type"
      ? { ...f, choices: c.instance_types.map((i) => ({ value: i.name, label: instanceLabel(i) })) }
      : f.catalog === "region"
        ? { ...f, choices: c.regions.map((r) => ({ value: r.id, label: regionLabel(r) })) }
        : f.catalog === "kubernetes_version"
          ? { ...f, choices: c.kubernetes_versions.map((v) => ({ value: v, label: v })) }
          : f,
  );
}

import { describe, expect, it } from "vitest";
import { instanceLabel, parseCatalog, regionLabel } from "./parse";

import aws from "../../../shared/domain/catalog/providers/aws.toml?raw";
import azure from "../../../shared/domain/catalog/providers/azure.toml?raw";
import digitalocean from "../../../shared/domain/catalog/providers/digitalocean.toml?raw";
import gcp from "../../../shared/domain/catalog/providers/gcp.toml?raw";
import linode from "../../../shared/domain/catalog/providers/linode.toml?raw";

const FILES: Record<string, string> = { aws, azure, digitalocean, gcp, linode };
const read = (p: string) => FILES[p];

describe("provider catalogs", () => {
  it("reads every shipped catalog completely", () => {
    for (const p of ["aws", "azure", "digitalocean", "gcp", "linode"]) {
      const text = read(p);
      const c = parseCatalog(text);
      expect(c.provider).toBe(p);
      expect(c.regions.length).toBe(text.match(/^\[\[regions\]\]/gm)!.length);
      expect(c.instance_types.length).toBe(text.match(/^\[\[instance_types\]\]/gm)!.length);
      for (const i of c.instance_types) expect(i.vcpu).toBeGreaterThan(0);
      expect(c.kubernetes_versions.length).toBeGreaterThan(0);
      for (const v of c.kubernetes_versions) expect(v).toMatch(/^1\.\d+$/);
    }
  });
  it("labels regions and instance types", () => {
    const aws = parseCatalog(read("aws"));
    expect(regionLabel(aws.regions.find((r) => r.id === "sa-east-1")!)).toBe("sa-east-1 — South America (São Paulo)");
    expect(aws.regions[0].zones).toEqual(["us-east-1a", "us-east-1b", "us-east-1c"]);
    expect(instanceLabel(aws.instance_types.find((i) => i.name === "t3.medium")!)).toBe("t3.medium — 2 vCPU, 4 GiB (burstable)");
  });
});

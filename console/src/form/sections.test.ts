import { describe, expect, it } from "vitest";
import { groupFields, sectionOf } from "./sections";
import { fieldsFromTemplate, type VariableSpec } from "./schema";
import basic from "../../../templates/catalog/aws-eks-basic/template.toml?raw";
import advanced from "../../../templates/catalog/aws-eks-advanced/template.toml?raw";

const TEMPLATES: Record<string, string> = { "aws-eks-basic": basic, "aws-eks-advanced": advanced };

/** The variables of a shipped template, as the API lists them (managed ones are not offered). */
function shipped(name: string): Record<string, VariableSpec> {
  const text = TEMPLATES[name];
  const out: Record<string, VariableSpec> = {};
  for (const block of text.split(/^\[variables\./m).slice(1)) {
    const n = /^(\w+)\]/.exec(block)![1];
    if (/^managed = true/m.test(block)) continue;
    out[n] = { type: /^type = "([^"]+)"/m.exec(block)![1], description: "", required: false, sensitive: false };
  }
  return out;
}

describe("form sections", () => {
  it("puts each variable of aws-eks-basic where its template puts it", () => {
    const fields = fieldsFromTemplate({ name: "aws-eks-basic", version: "1", variables: shipped("aws-eks-basic"), rules: [], defaults: {} }, "aws");
    const secs = Object.fromEntries(groupFields(fields).map((s) => [s.title, s.fields.map((f) => f.name)]));
    // In the order people read them (the count before its limits), not alphabetically.
    expect(secs).toEqual({
      Kubernetes: ["kubernetes_version", "endpoint_public_access", "public_access_cidrs"],
      Nodes: ["node_count", "node_instance_type", "min_nodes", "max_nodes", "node_disk_size", "capacity_type"],
      Network: ["vpc_cidr", "az_count", "nat_gateway", "admin_cidrs"],
      Tags: ["tags"],
    });
  });
  it("groups the advanced template's add-ons, and keeps unknown names in Other settings", () => {
    const fields = fieldsFromTemplate({ name: "aws-eks-advanced", version: "1", variables: shipped("aws-eks-advanced"), rules: [], defaults: {} }, "aws");
    const addons = groupFields(fields).find((s) => s.id === "addons")!.fields.map((f) => f.name).sort();
    expect(addons).toEqual([
      "cert_manager_enabled", "grafana_admin_password", "ingress_enabled", "ingress_replicas", "letsencrypt_email",
      "monitoring_enabled", "monitoring_retention_days", "monitoring_storage_gb",
    ]);
    expect(sectionOf("something_else")).toBe("other");
  });
  it("follows the template's own sections where it names them", () => {
    const v = (section?: string) => ({ type: "integer", description: "", required: false, sensitive: false, section });
    const fields = fieldsFromTemplate({
      name: "t", version: "1", rules: [], defaults: {},
      variables: { node_count: v("Sizing"), max_nodes: v("Sizing"), vpc_cidr: v(), backup_hours: v("Backups"), weird: v() },
    }, "aws");
    expect(groupFields(fields).map((s) => [s.title, s.fields.map((f) => f.name)])).toEqual([
      ["Network", ["vpc_cidr"]],
      ["Backups", ["backup_hours"]],
      ["Sizing", ["node_count", "max_nodes"]],
      ["Other settings", ["weird"]],
    ]);
  });
  it("lists required fields first within a section", () => {
    const fields = fieldsFromTemplate({
      name: "t", version: "1", rules: [], defaults: {},
      variables: { min_nodes: { type: "integer", description: "", required: false, sensitive: false }, node_count: { type: "integer", description: "", required: true, sensitive: false } },
    }, "aws");
    expect(groupFields(fields)[0].fields.map((f) => f.name)).toEqual(["node_count", "min_nodes"]);
  });
});

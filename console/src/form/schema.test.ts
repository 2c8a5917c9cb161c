import { describe, expect, it } from "vitest";
import {
  asRules, buildVariables, checkRules, fieldsFromTemplate, initialValue, mapFieldErrors, validateField, validateName,
  type TemplateDetailLike,
} from "./schema";

const tpl: TemplateDetailLike = {
  name: "aws-eks-basic",
  version: "1.0.0",
  defaults: { aws: { region: "us-east-1", variables: { node_instance_type: "t3.large" } } },
  rules: [{ left: "max_nodes", op: ">=", right: "min_nodes", message: "max_nodes must be at least min_nodes" }, { bogus: 1 }],
  variables: {
    node_count: { type: "integer", description: "nodes", required: false, sensitive: false, default: 2, min: 1, max: 100 },
    min_nodes: { type: "integer", description: "", required: false, sensitive: false, default: 1, min: 1, max: 100 },
    max_nodes: { type: "integer", description: "", required: false, sensitive: false, default: 5, min: 1, max: 100 },
    ratio: { type: "number", description: "", required: false, sensitive: false, min: 0.5, max: 1.5 },
    kubernetes_version: { type: "string", description: "", required: false, sensitive: false, default: "1.30", enum: ["1.29", "1.30", "1.31"] },
    node_instance_type: { type: "string", description: "", required: false, sensitive: false, default: "t3.medium", catalog: "instance_type" },
    vpc_cidr: { type: "string", description: "", required: false, sensitive: false, default: "10.0.0.0/16", pattern: "10\\.\\d{1,3}\\.0\\.0/16" },
    nat_gateway: { type: "bool", description: "", required: false, sensitive: false, default: false },
    admin_cidrs: { type: "list(string)", description: "", required: false, sensitive: false, default: [], pattern: "\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}/\\d{1,2}" },
    tags: { type: "map(string)", description: "", required: false, sensitive: false, default: {}, max_length: 5 },
    db_password: { type: "string", description: "", required: true, sensitive: true },
    owner: { type: "string", description: "", required: true, sensitive: false },
  },
};

const fields = fieldsFromTemplate(tpl, "aws");
const f = (n: string) => fields.find((x) => x.name === n)!;

describe("fieldsFromTemplate", () => {
  it("maps types to input kinds", () => {
    expect(f("node_count").kind).toBe("integer");
    expect(f("ratio").kind).toBe("number");
    expect(f("nat_gateway").kind).toBe("bool");
    expect(f("admin_cidrs").kind).toBe("list");
    expect(f("tags").kind).toBe("map");
    expect(f("db_password").kind).toBe("password");
    expect(f("owner").kind).toBe("text");
  });
  it("turns enums into selects with their options", () => {
    expect(f("kubernetes_version").kind).toBe("select");
    expect(f("kubernetes_version").options).toEqual(["1.29", "1.30", "1.31"]);
  });
  it("puts required fields first and carries the API path", () => {
    expect(fields.slice(0, 2).map((x) => x.name)).toEqual(["db_password", "owner"]);
    expect(f("node_count").path).toBe("variables.node_count");
  });
  it("takes min/max/pattern/max_length", () => {
    expect([f("node_count").min, f("node_count").max]).toEqual([1, 100]);
    expect(f("vpc_cidr").pattern).toBeDefined();
    expect(f("tags").maxLength).toBe(5);
  });
  it("applies the provider's defaults over the template's", () => {
    expect(f("node_instance_type").default).toBe("t3.large");
    expect(initialValue(f("node_instance_type"))).toBe("t3.large");
  });
  it("starts from defaults", () => {
    expect(initialValue(f("node_count"))).toBe("2");
    expect(initialValue(f("nat_gateway"))).toBe(false);
    expect(initialValue(f("admin_cidrs"))).toEqual([]);
    expect(initialValue(f("kubernetes_version"))).toBe("1.30");
    expect(initialValue(f("owner"))).toBe("");
  });
  it("never pre-fills a masked sensitive default", () => {
    const t2 = { ...tpl, variables: { s: { type: "string", description: "", required: false, sensitive: true, default: "(sensitive)" } } };
    expect(initialValue(fieldsFromTemplate(t2, "aws")[0])).toBe("");
  });
});

describe("validateField", () => {
  it("checks min/max and integers", () => {
    expect(validateField(f("node_count"), "500")).toEqual(["must be at most 100"]);
    expect(validateField(f("node_count"), "0")).toEqual(["must be at least 1"]);
    expect(validateField(f("node_count"), "2.5")).toEqual(["must be a whole number"]);
    expect(validateField(f("node_count"), "abc")).toEqual(["must be a number"]);
    expect(validateField(f("node_count"), "50")).toEqual([]);
    expect(validateField(f("ratio"), "0.75")).toEqual([]);
    expect(validateField(f("ratio"), "2")).toEqual(["must be at most 1.5"]);
  });
  it("checks required", () => {
    expect(validateField(f("owner"), "")).toEqual(["required"]);
    expect(validateField(f("node_count"), "")).toEqual([]);
  });
  it("anchors patterns like the API", () => {
    expect(validateField(f("vpc_cidr"), "10.1.0.0/16")).toEqual([]);
    expect(validateField(f("vpc_cidr"), "x10.1.0.0/16")).toHaveLength(1);
    expect(validateField(f("admin_cidrs"), ["1.2.3.4/32", "nope"])).toEqual([
      "item 2 must be an IPv4 network in CIDR form, like 10.0.0.0/16",
    ]);
  });
  it("checks map keys and max_length", () => {
    expect(validateField(f("tags"), [["env", "prod"]])).toEqual([]);
    expect(validateField(f("tags"), [["env", "production"]])).toEqual(['"env" is longer than 5 characters']);
    expect(validateField(f("tags"), [["", "x"]])).toEqual(["every entry needs a key"]);
    expect(validateField(f("tags"), [["a", "1"], ["a", "2"]])).toEqual(['key "a" appears twice']);
  });
  it("checks enum membership", () => {
    expect(validateField(f("kubernetes_version"), "1.28")).toHaveLength(1);
  });
  it("validates the cluster name", () => {
    expect(validateName("demo-1")).toEqual([]);
    expect(validateName("Demo")).toHaveLength(1);
    expect(validateName("ab-")).toHaveLength(1);
  });
});

describe("buildVariables", () => {
  it("sends typed values that differ from defaults, and required ones", () => {
    const values = {
      node_count: "3", nat_gateway: false, tags: [["env", "dev"]] as [string, string][], owner: "me", db_password: "pw",
      kubernetes_version: "1.30",
    };
    expect(buildVariables(fields, values)).toEqual({ node_count: 3, tags: { env: "dev" }, owner: "me", db_password: "pw" });
  });
});

describe("rules", () => {
  it("ignores malformed rules and reports broken ones on the left field", () => {
    const rules = asRules(tpl.rules);
    expect(rules).toHaveLength(1);
    expect(checkRules(rules, fields, { min_nodes: "4", max_nodes: "3" })).toEqual({
      "variables.max_nodes": ["max_nodes must be at least min_nodes"],
    });
    expect(checkRules(rules, fields, { min_nodes: "2" })).toEqual({});
  });
});

describe("mapFieldErrors", () => {
  it("puts every error beside its field, nested paths on their variable", () => {
    const paths = ["name", "region", ...fields.map((x) => x.path)];
    const errs = [
      { field: "variables.node_count", problem: "500 is above the maximum", allowed: "1..=100" },
      { field: "variables.tags.env", problem: "too long", allowed: "at most 5 characters" },
      { field: "name", problem: "taken", allowed: "a new name" },
      { field: "Idempotency-Key", problem: "reused", allowed: "a fresh key" },
    ];
    const { byPath, unmatched } = mapFieldErrors(errs, paths);
    expect(byPath["variables.node_count"][0].allowed).toBe("1..=100");
    expect(byPath["variables.tags"][0].field).toBe("variables.tags.env");
    expect(byPath["name"]).toHaveLength(1);
    expect(unmatched.map((e) => e.field)).toEqual(["Idempotency-Key"]);
  });
});

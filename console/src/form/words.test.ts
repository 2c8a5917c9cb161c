import { describe, expect, it } from "vitest";
import { describePattern, fieldLabel, humanLabel, oneError, patternSentence, valueText } from "./words";

describe("labels", () => {
  it("prefer the template's label", () => {
    expect(fieldLabel({ name: "node_count", label: "Workers" })).toBe("Workers");
    expect(fieldLabel({ name: "vpc_cidr", label: " " })).toBe("VPC CIDR");
  });
  it("reads variable names as words", () => {
    expect(humanLabel("vpc_cidr")).toBe("VPC CIDR");
    expect(humanLabel("kubernetes_version")).toBe("Kubernetes version");
    expect(humanLabel("nat_gateway")).toBe("NAT gateway");
    expect(humanLabel("node_count")).toBe("Number of nodes");
    expect(humanLabel("node_instance_type")).toBe("Node size");
    expect(humanLabel("monitoring_retention_days")).toBe("Monitoring retention days");
    expect(humanLabel("tags")).toBe("Tags");
  });
});

describe("values in words", () => {
  it("reads booleans, lists and maps without JSON", () => {
    expect(valueText(true)).toBe("on");
    expect(valueText(["0.0.0.0/0", "10.0.0.0/8"])).toBe("0.0.0.0/0, 10.0.0.0/8");
    expect(valueText([])).toBe("none");
    expect(valueText({ env: "prod", team: "a" })).toBe("env = prod, team = a");
    expect(valueText({})).toBe("none");
    expect(valueText(2)).toBe("2");
    expect(valueText(undefined)).toBe("—");
  });
});

describe("patterns in words", () => {
  it("explains the templates' patterns without the regex", () => {
    expect(describePattern(String.raw`\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}/\d{1,2}`)).toBe("an IPv4 network in CIDR form, like 10.0.0.0/16");
    expect(describePattern(String.raw`10\.\d{1,3}\.0\.0/16`)).toBe("a /16 network inside 10.0.0.0/8, like 10.0.0.0/16");
    expect(describePattern(String.raw`([^@\s]+@[^@\s]+)?`)).toBe("an email address, like ops@example.com, or empty");
    expect(describePattern(".{12,}")).toBe("at least 12 characters");
    expect(describePattern("[a-z][a-z0-9-]{1,38}[a-z0-9]")).toBe("lower-case letters, digits and '-', starting with a letter");
    expect(describePattern("gp2|gp3")).toBe("one of gp2, gp3");
  });
  it("prefers the API's words, and never shows an unknown regex", () => {
    expect(describePattern(String.raw`\d+`, "a network in CIDR notation")).toBe("a network in CIDR notation");
    expect(describePattern(String.raw`^x(?=y)\w+$`)).toBeNull();
    expect(patternSentence(String.raw`^x(?=y)\w+$`)).toBe("in the format the template requires");
  });
});

describe("one error per field", () => {
  it("shows the API's answer (with allowed) instead of the check made while typing", () => {
    expect(oneError(["must be at most 100"], [{ field: "variables.node_count", problem: "must be at most 100", allowed: "1-100" }])).toEqual({
      text: "must be at most 100", allowed: "1-100", field: "variables.node_count",
    });
  });
  it("else the first problem, saying how many more", () => {
    expect(oneError(["item 1 is bad", "item 2 is bad"], [])).toEqual({ text: "item 1 is bad (and 1 more)" });
    expect(oneError([], [])).toBeNull();
  });
});

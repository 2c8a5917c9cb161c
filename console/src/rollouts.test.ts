import { describe, expect, it } from "vitest";
import { actions, EMPTY_ROLLOUT, money, parseWaves, planCounts, rolloutRequest } from "./rollouts";

describe("parseWaves", () => {
  it("reads counts and cumulative percents, the last 100%", () => {
    expect(parseWaves("1, 25%, 100%")).toEqual({ waves: [{ clusters: 1 }, { percent: 25 }, { percent: 100 }] });
    expect(parseWaves("100%")).toEqual({ waves: [{ percent: 100 }] });
  });
  it("says what is wrong", () => {
    expect(parseWaves("1, 50%").error).toMatch(/last wave must be 100%/);
    expect(parseWaves("one, 100%").error).toMatch(/'one'/);
    expect(parseWaves("0, 100%").error).toMatch(/'0'/);
    expect(parseWaves("").error).toMatch(/at least one wave/);
  });
});

describe("rolloutRequest", () => {
  const d = { ...EMPTY_ROLLOUT, template: "aws-eks-basic", to_version: "1.2.0" };
  it("a preview sends the template, version and selector only", () => {
    expect(rolloutRequest({ ...d, from_versions: "1.1.0", clusters: "a, b" }, false)).toEqual({
      body: { template: "aws-eks-basic", to_version: "1.2.0", mode: "preview", selector: { from_versions: ["1.1.0"], clusters: ["a", "b"] } },
      errors: {},
    });
  });
  it("an apply sends waves, soak and stop rules", () => {
    const { body, errors } = rolloutRequest({ ...d, mode: "apply", soak_minutes: "10", allow_replace: "aws_eks_node_group.this", max_monthly_delta: "50" }, false);
    expect(errors).toEqual({});
    expect(body).toMatchObject({
      mode: "apply",
      waves: [{ clusters: 1 }, { percent: 25 }, { percent: 100 }],
      soak_seconds: 600,
      stop: { allow_replace: ["aws_eks_node_group.this"], max_monthly_delta: 50 },
    });
  });
  it("a preview sends the stop rules of the apply in mind, so its report counts what they would hold", () => {
    const { body, errors } = rolloutRequest({ ...d, allow_replace: "module.fleet.aws_subnet.this", allow_destroy: true }, false);
    expect(errors).toEqual({});
    expect(body).toEqual({
      template: "aws-eks-basic", to_version: "1.2.0", mode: "preview",
      stop: { allow_replace: ["module.fleet.aws_subnet.this"], allow_destroy: true },
    });
    expect(rolloutRequest({ ...d, max_monthly_delta: "lots" }, false).errors).toEqual({ "stop.max_monthly_delta": ["US dollars, 0 or more, e.g. 50"] });
  });
  it("tenants are the operator's only", () => {
    expect(rolloutRequest({ ...d, tenants: "acme" }, false).body.selector).toBeUndefined();
    expect(rolloutRequest({ ...d, tenants: "acme" }, true).body.selector).toEqual({ tenants: ["acme"] });
  });
  it("names each bad field as the API does", () => {
    const { errors } = rolloutRequest({ ...EMPTY_ROLLOUT, mode: "apply", waves: "1", soak_minutes: "x", max_monthly_delta: "-1" }, false);
    expect(Object.keys(errors).sort()).toEqual(["soak_seconds", "stop.max_monthly_delta", "template", "to_version", "waves"]);
  });
});

describe("texts", () => {
  it("plan counts, money, actions", () => {
    expect(planCounts({ status: "planned", create: 1, update: 2, replace: ["a"], destroy: [] })).toBe("+1 ~2 ±1 -0");
    expect(planCounts({ status: "planning", create: 0, update: 0, replace: [], destroy: [] })).toBe("—");
    expect(money(120)).toBe("+$120.00/month");
    expect(money(-3.5)).toBe("−$3.50/month");
    expect(money(null)).toBe("—");
    expect(actions("paused")).toEqual({ pause: false, resume: true, abort: true });
    expect(actions("completed")).toEqual({ pause: false, resume: false, abort: false });
    expect(actions("soaking").pause).toBe(true);
  });
});

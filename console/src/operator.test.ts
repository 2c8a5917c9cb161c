import { describe, expect, it } from "vitest";
import { messagesByField, budgetText, draftOf, EMPTY_DRAFT, isOperator, lifetimeText, tenantChange, usage, validateTenantId, type AdminTenant } from "./operator";

const tenant: AdminTenant = {
  id: "acme",
  max_clusters: 10,
  max_open_operations: 20,
  max_concurrent_operations: 2,
  monthly_budget: 500,
  approval: null,
  max_ttl_hours: null,
  suspended: false,
  suspended_reason: null,
  cluster_count: 3,
  open_operations: 0,
  created_at: "2026-11-30T10:00:00Z",
};

describe("isOperator", () => {
  it("needs the platform scope and no tenant", () => {
    expect(isOperator({ scope: "platform:admin" })).toBe(true);
    expect(isOperator({ scope: "openid platform:admin" })).toBe(true);
    expect(isOperator({ scope: "platform:admin", tenant: "acme" })).toBe(false);
    expect(isOperator({ scope: "platform:admin", tenant_id: "acme" })).toBe(false);
    expect(isOperator({ scope: "platform:admin", "custom:tenant_id": "acme" })).toBe(false);
    expect(isOperator({ scope: "clusters:write platform:administrator" })).toBe(false);
    expect(isOperator({})).toBe(false);
  });
});

describe("tenantChange", () => {
  it("sends nothing when nothing changed", () => {
    expect(tenantChange(tenant, draftOf(tenant))).toEqual({ body: {}, errors: {} });
  });
  it("sends only the changed fields, an emptied one as the platform default", () => {
    const d = { ...draftOf(tenant), max_clusters: "12", monthly_budget: "", approval: "required" as const };
    expect(tenantChange(tenant, d)).toEqual({ body: { max_clusters: 12, monthly_budget: null, approval: "required" }, errors: {} });
  });
  it("names each bad field and what it allows", () => {
    const d = { ...draftOf(tenant), max_clusters: "0", max_concurrent_operations: "2.5", monthly_budget: "-3", max_ttl_hours: "x" };
    const { errors } = tenantChange(tenant, d);
    expect(Object.keys(errors).sort()).toEqual(["max_clusters", "max_concurrent_operations", "max_ttl_hours", "monthly_budget"]);
    expect(errors.max_clusters[0]).toMatch(/1 to 100000/);
  });
  it("a new tenant sends what was filled in", () => {
    expect(tenantChange(null, { ...EMPTY_DRAFT, max_clusters: "5", monthly_budget: "99.50" })).toEqual({
      body: { max_clusters: 5, monthly_budget: 99.5 },
      errors: {},
    });
  });
});

describe("texts", () => {
  it("usage, budget, lifetime", () => {
    expect(usage(3, 10)).toEqual({ text: "3 of 10", ratio: 0.3 });
    expect(usage(12, 10).ratio).toBe(1);
    expect(budgetText(null)).toBe("none");
    expect(budgetText(1250)).toBe("$1,250/month");
    expect(lifetimeText(48)).toBe("2 d");
    expect(lifetimeText(5)).toBe("5 h");
    expect(lifetimeText(null)).toBe("platform default");
  });
  it("tenant ids", () => {
    expect(validateTenantId("")).toEqual(["required"]);
    expect(validateTenantId("acme_2")).toEqual([]);
    expect(validateTenantId("a b")).not.toEqual([]);
    expect(validateTenantId("Acme")).not.toEqual([]);
    expect(validateTenantId("-acme")).not.toEqual([]);
  });
});

describe("messagesByField", () => {
  it("groups the API's field errors with what each allows", () => {
    expect(
      messagesByField([
        { field: "max_clusters", problem: "must be a whole number", allowed: "1 to 100000" },
        { field: "max_clusters", problem: "too many", allowed: "" },
      ]),
    ).toEqual({ max_clusters: ["must be a whole number: 1 to 100000", "too many"] });
    expect(messagesByField(undefined)).toEqual({});
  });
});

import { describe, expect, it } from "vitest";
import { operationFiltersFrom, why } from "./adminOperations";

describe("operationFiltersFrom", () => {
  it("takes the filters a link carries, in any case, and drops unknown kinds and statuses", () => {
    expect(operationFiltersFrom("?tenant=acme&cluster=cl-1&kind=Drift-Check&status=FAILED")).toEqual({
      tenant: "acme",
      cluster: "cl-1",
      kind: "drift-check",
      status: "failed",
    });
    expect(operationFiltersFrom("?kind=explode&status=sleeping")).toEqual({ tenant: "", cluster: "", kind: "", status: "" });
  });
});

describe("why", () => {
  it("says what failed, where and the fix; else why it waits; else nothing", () => {
    const error = { what: "the plan was denied by policy", step: "policy", fix: "change the node size", category: "policy", retryable: false };
    expect(why({ error, wait_reason: null } as never)).toBe("the plan was denied by policy (at policy) — change the node size");
    expect(why({ error: null, wait_reason: "the tenant is at its concurrency limit" })).toBe("the tenant is at its concurrency limit");
    expect(why({ error: null, wait_reason: null })).toBe("");
  });
});

import { describe, expect, it } from "vitest";
import { parseRoute } from "./router";

describe("parseRoute", () => {
  it("maps paths to pages", () => {
    expect(parseRoute("/")).toEqual({ page: "dashboard" });
    expect(parseRoute("/dashboard")).toEqual({ page: "dashboard" });
    expect(parseRoute("/clusters/")).toEqual({ page: "clusters" });
    expect(parseRoute("/clusters/new")).toEqual({ page: "create" });
    expect(parseRoute("/clusters/cl-1")).toEqual({ page: "cluster", id: "cl-1" });
    expect(parseRoute("/clusters/cl-1/settings")).toEqual({ page: "cluster", id: "cl-1", tab: "settings" });
    expect(parseRoute("/operations/op-%2F1")).toEqual({ page: "operation", id: "op-/1" });
    expect(parseRoute("/webhook")).toEqual({ page: "webhook" });
    expect(parseRoute("/cloud-access/")).toEqual({ page: "cloud-access" });
    expect(parseRoute("/audit/")).toEqual({ page: "audit" });
    expect(parseRoute("/login")).toEqual({ page: "login" });
    expect(parseRoute("/nope/x")).toEqual({ page: "notfound" });
  });
});

import { describe, expect, it } from "vitest";
import { healthLabel, healthNote, isDegraded, nodesText, type Health } from "./health";

const report = (over: Partial<Health> = {}): Health => ({
  status: "healthy", reasons: [], since: "2026-11-30T10:00:00.000000Z", nodes_ready: 3, nodes_total: 3,
  nodes_requested: 3, kubernetes_version: "v1.31.2", unhealthy_components: [], warnings: [],
  agent_version: "0.1.0", last_seen: "2026-11-30T10:05:00.000000Z", ...over,
});

describe("cluster health", () => {
  it("labels each status with its tone and badges only degraded clusters", () => {
    expect(healthLabel(report())).toEqual({ text: "Healthy", tone: "ok" });
    expect(healthLabel(report({ status: "degraded" }))).toEqual({ text: "Degraded", tone: "warn" });
    expect(healthLabel(undefined).text).toBe("Unknown");
    expect(isDegraded(report({ status: "degraded" }))).toBe(true);
    expect(isDegraded(report())).toBe(false);
    expect(isDegraded(undefined)).toBe(false);
  });

  it("reads nodes Ready of requested, with the total when it differs", () => {
    expect(nodesText(report())).toBe("3 of 3 requested Ready");
    expect(nodesText(report({ nodes_ready: 1, nodes_total: 4 }))).toBe("1 of 3 requested Ready, 4 in all");
    expect(nodesText(report({ status: "unknown", nodes_ready: null, nodes_requested: null }))).toBeNull();
  });

  it("explains an unknown health and says nothing more of a reported one", () => {
    expect(healthNote(report({ status: "unknown" }))).toMatch(/No report/);
    expect(healthNote(report({ status: "degraded" }))).toBeNull();
  });
});

import { describe, expect, it } from "vitest";
import { actionText, actorText, clusterText, outcomeText, reasonText } from "./audit";

describe("audit entries", () => {
  it("read as words, with names for cluster ids", () => {
    expect(actionText("cluster.create")).toBe("Create cluster");
    expect(actionText("something.new")).toBe("something.new");
    expect(actorText("strato:scheduler")).toBe("Strato (scheduler)");
    expect(actorText("alice")).toBe("alice");
    expect(clusterText("cl-1", new Map([["cl-1", "demo"]]))).toBe("demo");
    expect(clusterText("cl-2", new Map())).toBe("cl-2");
  });
  it("say why a request was refused, and nothing for routine entries", () => {
    expect(outcomeText({ outcome: "refused", status: 422 })).toBe("refused 422");
    expect(reasonText({ outcome: "refused", detail: "node_count: must be at most 100" })).toBe("node_count: must be at most 100");
    expect(reasonText({ outcome: "accepted", detail: "op-1" })).toBeNull();
    expect(reasonText({ outcome: "refused", detail: null })).toBeNull();
  });
});

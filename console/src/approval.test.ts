import { describe, expect, it } from "vitest";
import {
  actionLabel, awaitingApproval, canDecide, choiceOf, createApproval, decisionBody, decisionProblem, isEnded, modeText, patchApproval,
  shortSha, statusLabel, summaryText, validateComment, verdictLabel, type Approval,
} from "./approval";

const approval = (decision: Approval["decision"] = null): Approval => ({
  stage: "cluster", round: 1, summary: { add: 1, change: 0, destroy: 0 },
  changes: [{ address: "aws_eks_cluster.this", actions: ["create"] }],
  plan_sha256: "ab".repeat(32), requested_at: "2026-11-25T12:00:00Z", expires_at: "2026-11-26T12:00:00Z", decision,
});

describe("plan approvals", () => {
  it("keeps awaiting_approval out of the ended statuses and reads it with a space", () => {
    expect(isEnded("awaiting_approval")).toBe(false);
    for (const s of ["succeeded", "failed", "cancelled"]) expect(isEnded(s)).toBe(true);
    for (const s of ["queued", "dispatched", "running"]) expect(isEnded(s)).toBe(false);
    expect(statusLabel("awaiting_approval")).toBe("awaiting approval");
    expect(statusLabel("ACTIVE")).toBe("ACTIVE");
  });

  it("sums the plan up in Terraform's words", () => {
    expect(summaryText({ add: 1, change: 0, destroy: 0 })).toBe("1 to add, 0 to change, 0 to destroy");
    expect(summaryText({ add: 3, change: 2, destroy: 7 })).toBe("3 to add, 2 to change, 7 to destroy");
  });

  it("names each resource's actions, a delete and a create being a replace", () => {
    expect(actionLabel(["create"])).toBe("create");
    expect(actionLabel(["update"])).toBe("update in place");
    expect(actionLabel(["delete"])).toBe("destroy");
    expect(actionLabel(["delete", "create"])).toBe("replace");
    expect(actionLabel(["create", "delete"])).toBe("replace (create before destroy)");
    expect(actionLabel(["no-op"])).toBe("no change");
    expect(actionLabel(["read", "update"])).toBe("read, update");
  });

  it("shortens the plan checksum", () => {
    expect(shortSha("ab".repeat(32))).toBe("abababababab…");
    expect(shortSha("abc")).toBe("abc");
  });

  it("offers approve and reject only while the operation waits and nobody decided", () => {
    expect(canDecide("awaiting_approval", approval())).toBe(true);
    expect(canDecide("awaiting_approval", approval({ verdict: "approved", by: "alice", at: "2026-11-25T12:05:00Z", comment: null }))).toBe(false);
    expect(canDecide("awaiting_approval", null)).toBe(false);
    expect(canDecide("running", approval())).toBe(false);
    expect(canDecide("cancelled", approval())).toBe(false);
    expect(verdictLabel("expired")).toContain("nobody answered");
    expect(verdictLabel("approved")).toBe("Approved");
  });

  it("sends the comment trimmed, none when empty, and refuses more than 1,000 characters", () => {
    const plan = { plan_sha256: "ab".repeat(32), round: 1, stage: "cluster" };
    expect(decisionBody("  looks right  ", approval())).toEqual({ comment: "looks right", ...plan });
    expect(decisionBody("   ", approval())).toEqual(plan);
    expect(validateComment("x".repeat(1000))).toEqual([]);
    expect(validateComment("x".repeat(1001))[0]).toContain("1000");
    expect(validateComment("é".repeat(1000))).toEqual([]);
  });

  it("always names the plan it shows, so a decision never lands on another round or stage", () => {
    const second = { ...approval(), round: 2, stage: "addons", plan_sha256: "cd".repeat(32) };
    expect(decisionBody("", second)).toEqual({ plan_sha256: "cd".repeat(32), round: 2, stage: "addons" });
    const changed = decisionProblem({ type: "urn:strato:problem:plan-changed", title: "Another plan is pending", status: 409,
      detail: `now pending is round 2 of stage addons with plan_sha256 ${"cd".repeat(32)}` });
    expect(changed).toMatch(/Another plan is pending than the one shown.*review the plan now shown/);
    expect(changed).toContain("round 2 of stage addons");
  });

  it("explains a refused decision, keeping the API's detail", () => {
    const self = decisionProblem({ type: "urn:strato:problem:self-approval", title: "Approver is the requester", status: 403, detail: "you requested it", request_id: "r1" });
    expect(self).toMatch(/separation of duties/);
    expect(self).toContain("Approver is the requester: you requested it (request r1)");
    expect(decisionProblem({ type: "urn:strato:problem:forbidden", title: "Forbidden", status: 403, detail: "needs operations:approve" })).toMatch(/operations:approve scope/);
    expect(decisionProblem({ type: "urn:strato:problem:conflict", title: "Conflict", status: 409, detail: "already approved" })).toMatch(/no longer waits.*already approved/);
    expect(decisionProblem({ title: "Internal error", status: 500, detail: "boom" })).toBe("Internal error: boom");
  });

  it("maps the approval select to the create body, the PATCH body and the shown mode", () => {
    expect(createApproval("")).toEqual({});
    expect("approval" in createApproval("")).toBe(false);
    expect(createApproval("required")).toEqual({ approval: "required" });
    expect(createApproval("auto")).toEqual({ approval: "auto" });
    expect(patchApproval("")).toEqual({ approval: null });
    expect(patchApproval("required")).toEqual({ approval: "required" });
    expect(choiceOf(null)).toBe("");
    expect(choiceOf(undefined)).toBe("");
    expect(choiceOf("auto")).toBe("auto");
    expect(choiceOf("something-new")).toBe("");
    expect(modeText(null)).toBe("default (template/tenant)");
    expect(modeText("required")).toBe("required");
  });

  it("marks a cluster whose last operation waits for approval", () => {
    expect(awaitingApproval({ status: "awaiting_approval" })).toBe(true);
    expect(awaitingApproval({ status: "running" })).toBe(false);
    expect(awaitingApproval(null)).toBe(false);
  });
});

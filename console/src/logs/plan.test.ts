import { describe, expect, it } from "vitest";
import { planBadge, planFromLog, planWords } from "./plan";

const l = (step: string, text: string) => ({ step, text });

describe("plan summary", () => {
  it("reads Terraform's plan line, colours and all", () => {
    const c = planFromLog([l("init", "Initializing…"), l("plan", "\x1b[1mPlan:\x1b[0m 12 to add, 0 to change, 0 to destroy.")]);
    expect(c).toEqual({ add: 12, change: 0, destroy: 0 });
    expect(planBadge(c!)).toBe("+12 ~0 −0");
    expect(planWords(c!)).toBe("12 to add, 0 to change, 0 to destroy");
  });
  it("a replan in the same step replaces the first; stages add up; No changes is zero", () => {
    const c = planFromLog([
      l("plan:network", "Plan: 3 to add, 0 to change, 0 to destroy."),
      l("plan:network", "Plan: 2 to add, 1 to change, 0 to destroy."),
      l("plan:cluster", "Plan: 0 to add, 0 to change, 4 to destroy."),
      l("plan:addons", "No changes. Your infrastructure matches the configuration."),
    ]);
    expect(c).toEqual({ add: 2, change: 1, destroy: 4 });
    expect(planWords({ add: 0, change: 0, destroy: 0 })).toBe("no changes");
  });
  it("no plan line, no summary", () => {
    expect(planFromLog([l("apply", "Apply complete! Resources: 1 added, 0 changed, 0 destroyed.")])).toBeNull();
  });
});

import { describe, expect, it } from "vitest";
import { untilText, validateHours, validateTtl } from "./lifetime";

describe("cluster lifetime fields", () => {
  it("takes whole hours of at least 1", () => {
    expect(validateHours("24")).toEqual([]);
    for (const bad of ["", " ", "0", "-3", "1.5", "soon"]) expect(validateHours(bad)).toHaveLength(1);
  });

  it("leaves the create's lifetime optional but checks what is typed", () => {
    expect(validateTtl("")).toEqual([]);
    expect(validateTtl(" 72 ")).toEqual([]);
    expect(validateTtl("0")).toHaveLength(1);
    expect(validateTtl("two days")[0]).toContain("whole number");
  });

  it("says how long until the deletion", () => {
    const now = Date.parse("2026-11-25T12:00:00Z");
    expect(untilText("2026-11-25T12:45:00Z", now)).toBe("in 45 min");
    expect(untilText("2026-11-25T15:30:00Z", now)).toBe("in 3 h 30 min");
    expect(untilText("2026-11-30T12:00:00Z", now)).toBe("in 5 days");
    expect(untilText("2026-11-25T11:00:00Z", now)).toBe("due now");
    expect(untilText("not a time", now)).toBe("");
  });
});

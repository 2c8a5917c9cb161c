import { describe, expect, it } from "vitest";
import { LogStore, Reassembler, applyFrame, packBatch, parseTs, searchLines, unpackBatch, type LogLine } from "./model";
import { parseAnsi, stripAnsi } from "./ansi";

const T0 = Date.parse("2026-01-01T00:00:00Z");
const line = (seq: number, text = `line ${seq}`, stream: LogLine["stream"] = "stdout", step = "apply"): LogLine => ({
  seq, ts: T0 + seq * 1.5, stream, step, text,
});

describe("log_batch", () => {
  it("unpacks column-packed runs: seq in run order, ts = t0 + dt_us", () => {
    const lines = unpackBatch({
      first_seq: 10,
      t0: "2026-01-01T00:00:00.000001Z",
      runs: [
        { stream: "stdout", step: "plan", dt_us: [0, 1500], text: ["a", "b"] },
        { stream: "stderr", step: "apply", dt_us: [-2], text: ["c"] },
      ],
    });
    expect(lines.map((l) => [l.seq, l.stream, l.step, l.text])).toEqual([
      [10, "stdout", "plan", "a"], [11, "stdout", "plan", "b"], [12, "stderr", "apply", "c"],
    ]);
    expect(lines[1].ts - lines[0].ts).toBeCloseTo(1.5, 3);
    expect(lines[2].ts - lines[0].ts).toBeCloseTo(-0.002, 3);
  });
  it("packs and unpacks to the same lines", () => {
    const src = [line(1), line(2), line(3, "x", "stderr"), line(4, "y", "strato", "plan")];
    const f = packBatch("op-1", src);
    expect(f.runs).toHaveLength(3);
    const back = unpackBatch(f);
    expect(back.map((l) => [l.seq, l.stream, l.step, l.text])).toEqual(src.map((l) => [l.seq, l.stream, l.step, l.text]));
    back.forEach((l, i) => expect(l.ts).toBeCloseTo(src[i].ts, 3));
  });
  it("keeps microseconds of RFC 3339 timestamps", () => {
    expect(parseTs("2026-01-01T00:00:00.123456Z") - T0).toBeCloseTo(123.456, 3);
    expect(parseTs("2026-01-01T01:00:00+01:00")).toBe(T0);
  });
});

describe("LogStore", () => {
  it("orders by seq and drops duplicates", () => {
    const s = new LogStore();
    s.take([line(2), line(1), line(2)]);
    s.take([line(1), line(3)]);
    expect(s.lines.map((l) => l.seq)).toEqual([1, 2, 3]);
    expect(s.duplicates).toBe(2);
    expect(s.next).toBe(4);
  });
  it("detects a gap, waits, then fills it", () => {
    const s = new LogStore();
    s.take([line(1), line(2)], 1000);
    s.take([line(5), line(6)], 1100);
    expect(s.lines).toHaveLength(2);
    expect(s.missing()).toBe(3);
    expect(s.gapFor(2000, 2000)).toBe(false);
    expect(s.gapFor(2000, 3100)).toBe(true);
    s.take([line(3), line(4)], 3200);
    expect(s.lines.map((l) => l.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(s.missing()).toBeNull();
    expect(s.gapSince).toBeNull();
  });
  it("is complete only when the end's last_seq is reached", () => {
    const s = new LogStore();
    const parts = new Reassembler();
    applyFrame(s, parts, { type: "log", operation_id: "op", first_seq: 1, lines: [{ seq: 1, ts: "2026-01-01T00:00:00Z", stream: "stdout", step: "a", text: "x" }] });
    applyFrame(s, parts, { type: "end", final_status: "succeeded", last_seq: 2 });
    expect(s.complete()).toBe(false);
    applyFrame(s, parts, packBatch("op", [line(2)]));
    expect(s.complete()).toBe(true);
  });
  it("reassembles log_part frames in any order, once", () => {
    const s = new LogStore();
    const parts = new Reassembler();
    const part = (p: number, text: string) => ({
      type: "log_part" as const, operation_id: "op", seq: 1, ts: "2026-01-01T00:00:00Z", stream: "stdout" as const, step: "apply", part: p, parts: 3, text,
    });
    expect(applyFrame(s, parts, part(2, "C")).added).toBe(0);
    expect(applyFrame(s, parts, part(0, "A")).added).toBe(0);
    expect(applyFrame(s, parts, part(0, "A")).added).toBe(0);
    expect(applyFrame(s, parts, part(1, "B")).added).toBe(1);
    expect(s.lines[0].text).toBe("ABC");
  });
  it("holds 50,000 lines and renders the download", () => {
    const s = new LogStore();
    const all = Array.from({ length: 50_000 }, (_, i) => line(i + 1, `\x1b[32mok\x1b[0m ${i + 1}`));
    for (let i = all.length; i > 0; i -= 1000) s.take(all.slice(Math.max(0, i - 1000), i));
    expect(s.lines).toHaveLength(50_000);
    const text = s.toText();
    expect(text.startsWith("ok 1\nok 2\n")).toBe(true);
    expect(text.endsWith("ok 50000\n")).toBe(true);
  });
});

describe("search", () => {
  it("finds lines case-insensitively, ignoring escape codes", () => {
    const lines = [line(1, "Apply complete"), line(2, "\x1b[31mERROR\x1b[0m: quota"), line(3, "plan")];
    expect(searchLines(lines, "error")).toEqual([1]);
    expect(searchLines(lines, "31m")).toEqual([]);
    expect(searchLines(lines, "PL")).toEqual([0, 2]);
    expect(searchLines(lines, "")).toEqual([]);
  });
});

describe("ANSI", () => {
  it("parses SGR colours, bold and resets", () => {
    const segs = parseAnsi("a\x1b[1;31mb\x1b[0mc");
    expect(segs.map((s) => s.text)).toEqual(["a", "b", "c"]);
    expect(segs[1].bold).toBe(true);
    expect(segs[1].fg).toBeDefined();
    expect(segs[2].fg).toBeUndefined();
  });
  it("handles 256 and true colour, bright and background", () => {
    expect(parseAnsi("\x1b[38;5;196mx")[0].fg).toBe("rgb(255,0,0)");
    expect(parseAnsi("\x1b[38;2;1;2;3mx")[0].fg).toBe("rgb(1,2,3)");
    expect(parseAnsi("\x1b[44;93mx")[0].bg).toBeDefined();
  });
  it("drops non-SGR sequences and strips everything", () => {
    expect(parseAnsi("a\x1b[2Kb\x1b]0;title\x07c").map((s) => s.text).join("")).toBe("abc");
    expect(stripAnsi("\x1b[1m\x1b[32mok\x1b[0m")).toBe("ok");
  });
  it("plain text is one segment", () => {
    expect(parseAnsi("plain")).toEqual([{ text: "plain" }]);
  });
});

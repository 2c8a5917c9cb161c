// The log view model: lines kept by seq (at-least-once delivery → dedup), handed on in order, gaps
// detected (lines waiting for a missing seq), `log_batch` unpacking and `log_part` reassembly, search.
// Mirrors cli/src/follow.rs and shared/domain/src/{logs,live_batch}.rs.

import { stripAnsi } from "./ansi";

export type Stream = "stdout" | "stderr" | "strato";

export interface LogLine {
  seq: number;
  /** Epoch milliseconds (fractional: microsecond precision). */
  ts: number;
  stream: Stream;
  step: string;
  text: string;
}

export interface WireLine {
  seq: number;
  ts: string;
  stream: Stream;
  step: string;
  text: string;
}

export interface LineRun {
  stream: Stream;
  step: string;
  dt_us: number[];
  text: string[];
}

export interface SkippedLines {
  from_seq: number;
  to_seq: number;
}

export type ServerFrame =
  | { type: "log"; operation_id: string; first_seq: number; lines: WireLine[]; skipped?: SkippedLines }
  | { type: "log_batch"; operation_id: string; first_seq: number; t0: string; skipped?: SkippedLines; runs: LineRun[] }
  | { type: "log_part"; operation_id: string; seq: number; ts: string; stream: Stream; step: string; part: number; parts: number; text: string }
  | { type: "subscribed"; operation_id: string; from_seq: number; replayed_to: number; more?: boolean }
  | { type: "unsubscribed"; operation_id: string }
  | { type: "status"; operation_id?: string; cluster_id?: string; cluster_state: string; operation_status: string; step?: string | null; message?: string | null }
  | { type: "end"; operation_id?: string; final_status: string; last_seq: number }
  | { type: "error"; message: string; fix: string }
  | { type: "pong" };

/** RFC 3339 with up to nanosecond digits → epoch ms, keeping microseconds (Date.parse drops them). */
export function parseTs(ts: string): number {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)$/.exec(ts);
  if (!m) return Date.parse(ts);
  const whole = Date.parse(m[1] + m[3]);
  const frac = m[2] ? Number("0." + m[2]) * 1000 : 0;
  return whole + frac;
}

/** Epoch ms → RFC 3339 with microseconds. */
export function formatTs(ms: number): string {
  const whole = Math.floor(ms);
  const us = Math.round((ms - whole) * 1000);
  return new Date(whole).toISOString().replace(/Z$/, String(us).padStart(3, "0") + "Z");
}

export function fromWire(l: WireLine): LogLine {
  return { seq: l.seq, ts: parseTs(l.ts), stream: l.stream, step: l.step, text: l.text };
}

/** The lines of a `log_batch` frame: seq = first_seq + position in run order, ts = t0 + dt_us. */
export function unpackBatch(frame: { first_seq: number; t0: string; runs: LineRun[] }): LogLine[] {
  const t0 = parseTs(frame.t0);
  const out: LogLine[] = [];
  let seq = frame.first_seq;
  for (const r of frame.runs) {
    const n = Math.min(r.dt_us.length, r.text.length);
    for (let i = 0; i < n; i++) {
      out.push({ seq, ts: t0 + r.dt_us[i] / 1000, stream: r.stream, step: r.step, text: r.text[i] });
      seq++;
    }
  }
  return out;
}

/** Packs lines (consecutive seqs) as log-fanout does; for tests and the mock server. */
export function packBatch(operation_id: string, lines: LogLine[]): Extract<ServerFrame, { type: "log_batch" }> {
  const t0 = lines[0]?.ts ?? 0;
  const runs: LineRun[] = [];
  for (const l of lines) {
    const last = runs[runs.length - 1];
    const run = last && last.stream === l.stream && last.step === l.step ? last : undefined;
    const r = run ?? { stream: l.stream, step: l.step, dt_us: [], text: [] };
    if (!run) runs.push(r);
    r.dt_us.push(Math.round((l.ts - t0) * 1000));
    r.text.push(l.text);
  }
  return { type: "log_batch", operation_id, first_seq: lines[0]?.seq ?? 1, t0: formatTs(t0), runs };
}

/** Joins `log_part`s of one line (parts may repeat or arrive in any order). */
export class Reassembler {
  private partial = new Map<number, Map<number, string>>();

  push(f: Extract<ServerFrame, { type: "log_part" }>): LogLine | undefined {
    let got = this.partial.get(f.seq);
    if (!got) this.partial.set(f.seq, (got = new Map()));
    if (!got.has(f.part)) got.set(f.part, f.text);
    if (got.size < f.parts) return undefined;
    this.partial.delete(f.seq);
    const text = [...got.entries()].sort((a, b) => a[0] - b[0]).map((e) => e[1]).join("");
    return { seq: f.seq, ts: parseTs(f.ts), stream: f.stream, step: f.step, text };
  }
}

/** Lines by seq, handed on in order, each once. */
export class LogStore {
  /** Lines 1..next-1 (or from_seq..next-1), in seq order, no gaps. */
  readonly lines: LogLine[] = [];
  /** The next seq to append. */
  next: number;
  /** Lines after a gap, waiting for it to fill. */
  private pending = new Map<number, LogLine>();
  /** Since when (ms) lines have waited for a gap; null when nothing waits. */
  gapSince: number | null = null;
  finalStatus: string | null = null;
  lastSeq = 0;
  duplicates = 0;
  private version = 0;

  constructor(fromSeq = 1) {
    this.next = Math.max(1, fromSeq);
  }

  /** Adds lines; returns how many were appended in order. */
  take(lines: LogLine[], now: number = Date.now()): number {
    const before = this.lines.length;
    for (const l of lines) {
      if (l.seq < this.next || this.pending.has(l.seq)) {
        this.duplicates++;
        continue;
      }
      this.pending.set(l.seq, l);
    }
    for (let l = this.pending.get(this.next); l; l = this.pending.get(this.next)) {
      this.pending.delete(this.next);
      this.lines.push(l);
      this.next++;
    }
    if (this.pending.size === 0) this.gapSince = null;
    else if (this.gapSince === null) this.gapSince = now;
    const added = this.lines.length - before;
    if (added) this.version++;
    return added;
  }

  /** Whether lines have waited for a missing seq for at least `ms`. */
  gapFor(ms: number, now: number = Date.now()): boolean {
    return this.gapSince !== null && now - this.gapSince >= ms;
  }

  /** The first missing seq when there is a gap (`next`), else null. */
  missing(): number | null {
    return this.pending.size ? this.next : null;
  }

  pendingCount(): number {
    return this.pending.size;
  }

  end(finalStatus: string, lastSeq: number): void {
    this.finalStatus = finalStatus;
    this.lastSeq = lastSeq;
  }

  /** The operation ended and every line up to its last seq is here. */
  complete(): boolean {
    return this.finalStatus !== null && this.next > this.lastSeq;
  }

  /** Changes whenever lines are appended (for memoization). */
  get rev(): number {
    return this.version;
  }

  /** The whole log as plain text, one line per seq. */
  toText(): string {
    return this.lines.map((l) => stripAnsi(l.text)).join("\n") + (this.lines.length ? "\n" : "");
  }
}

/** Indexes (into `lines`) of lines whose plain text contains `query`, case-insensitively. */
export function searchLines(lines: LogLine[], query: string, from = 0, into: number[] = []): number[] {
  const q = query.toLowerCase();
  if (!q) return into;
  for (let i = from; i < lines.length; i++) {
    if (stripAnsi(lines[i].text).toLowerCase().includes(q)) into.push(i);
  }
  return into;
}

/** Applies one frame to the store; returns what the caller must act on. */
export function applyFrame(
  store: LogStore,
  parts: Reassembler,
  f: ServerFrame,
  now: number = Date.now(),
): {
  added: number;
  status?: Extract<ServerFrame, { type: "status" }>;
  ended?: boolean;
  error?: string;
  subscribed?: number;
  /** The replay stopped at a page: subscribe again from `next` for the rest of the archive. */
  more?: boolean;
} {
  switch (f.type) {
    case "log":
      return { added: store.take(f.lines.map(fromWire), now) };
    case "log_batch":
      return { added: store.take(unpackBatch(f), now) };
    case "log_part": {
      const l = parts.push(f);
      return { added: l ? store.take([l], now) : 0 };
    }
    case "status":
      return { added: 0, status: f };
    case "end":
      store.end(f.final_status, f.last_seq);
      return { added: 0, ended: true };
    case "subscribed":
      return { added: 0, subscribed: f.replayed_to, more: f.more === true };
    case "error":
      return { added: 0, error: `${f.message} (${f.fix})` };
    default:
      return { added: 0 };
  }
}

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Follower, GAP_REPAIR_MS } from "./follow";
import { packBatch, type LogLine } from "./model";

class FakeSocket {
  static all: FakeSocket[] = [];
  sent: string[] = [];
  closed = false;
  onopen: (() => void) | null = null;
  onmessage: ((m: { data: string }) => void) | null = null;
  onclose: (() => void) | null = null;
  onerror: (() => void) | null = null;
  constructor(public url: string) {
    FakeSocket.all.push(this);
    setTimeout(() => this.onopen?.(), 0);
  }
  send(s: string) { this.sent.push(s); }
  close() { this.closed = true; }
  recv(f: unknown) { this.onmessage?.({ data: JSON.stringify(f) }); }
}

const line = (seq: number): LogLine => ({ seq, ts: Date.parse("2026-01-01T00:00:00Z") + seq, stream: "stdout", step: "apply", text: `l${seq}` });
const batch = (from: number, to: number) => packBatch("op-1", Array.from({ length: to - from + 1 }, (_, i) => line(from + i)));

describe("Follower", () => {
  beforeEach(() => { vi.useFakeTimers(); FakeSocket.all = []; });
  afterEach(() => vi.useRealTimers());

  function start() {
    const states: string[] = [];
    let tickets = 0;
    const f = new Follower("op-1", {
      wsUrl: "ws://x/local",
      ticket: async () => `t${++tickets}`,
      socket: (u) => new FakeSocket(u) as unknown as WebSocket,
    }, { onLines() {}, onStatus() {}, onState: (s) => states.push(s) });
    f.start();
    return { f, states };
  }

  it("subscribes with a ticket from seq 1, and re-subscribes from the first missing seq after a lasting gap", async () => {
    const { f } = start();
    await vi.advanceTimersByTimeAsync(1);
    const s1 = FakeSocket.all[0];
    expect(s1.url).toBe("ws://x/local?token=t1");
    expect(JSON.parse(s1.sent[0])).toEqual({ action: "subscribe", operation_id: "op-1", from_seq: 1 });
    s1.recv(batch(1, 10));
    s1.recv(batch(1, 10)); // redelivered
    s1.recv(batch(21, 30)); // 11..20 skipped on the live path
    expect(f.store.lines).toHaveLength(10);
    await vi.advanceTimersByTimeAsync(GAP_REPAIR_MS + 600);
    expect(s1.closed).toBe(true);
    await vi.advanceTimersByTimeAsync(1000);
    const s2 = FakeSocket.all[1];
    expect(s2.url).toBe("ws://x/local?token=t2");
    expect(JSON.parse(s2.sent[0]).from_seq).toBe(11);
    s2.recv({ type: "log", operation_id: "op-1", first_seq: 11, lines: Array.from({ length: 20 }, (_, i) => ({ seq: 11 + i, ts: "2026-01-01T00:00:00Z", stream: "stdout", step: "apply", text: `l${11 + i}` })) });
    expect(f.store.lines.map((l) => l.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    f.stop();
  });

  it("reconnects when `end` arrives with lines missing, and stops once complete", async () => {
    const { f, states } = start();
    await vi.advanceTimersByTimeAsync(1);
    const s1 = FakeSocket.all[0];
    s1.recv(batch(1, 5));
    s1.recv({ type: "end", final_status: "succeeded", last_seq: 8 });
    await vi.advanceTimersByTimeAsync(1000);
    const s2 = FakeSocket.all[1];
    expect(JSON.parse(s2.sent[0]).from_seq).toBe(6);
    s2.recv(batch(6, 8));
    s2.recv({ type: "end", final_status: "succeeded", last_seq: 8 });
    expect(f.store.complete()).toBe(true);
    expect(states[states.length - 1]).toBe("ended");
    await vi.advanceTimersByTimeAsync(5000);
    expect(FakeSocket.all).toHaveLength(2);
    f.stop();
  });

  it("asks for the next page of the archive while `subscribed` says there is more", async () => {
    const { f } = start();
    await vi.advanceTimersByTimeAsync(1);
    const s1 = FakeSocket.all[0];
    s1.recv(batch(1, 5));
    s1.recv({ type: "subscribed", operation_id: "op-1", from_seq: 1, replayed_to: 5, more: true });
    expect(JSON.parse(s1.sent[1])).toEqual({ action: "subscribe", operation_id: "op-1", from_seq: 6 });
    s1.recv(batch(6, 8));
    s1.recv({ type: "subscribed", operation_id: "op-1", from_seq: 6, replayed_to: 8 });
    expect(s1.sent).toHaveLength(2);
    expect(f.store.lines.map((l) => l.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    f.stop();
  });

  it("reconnects after a drop", async () => {
    const { f } = start();
    await vi.advanceTimersByTimeAsync(1);
    FakeSocket.all[0].recv(batch(1, 3));
    FakeSocket.all[0].onclose?.();
    await vi.advanceTimersByTimeAsync(1000);
    expect(JSON.parse(FakeSocket.all[1].sent[0]).from_seq).toBe(4);
    f.stop();
  });
});

// Live log follower: ticket → WebSocket → subscribe {operation_id, from_seq}. Lines are kept by seq
// (LogStore); after a drop, an `end` with lines missing, or a gap lasting GAP_REPAIR_MS, it reconnects
// with a fresh ticket and subscribes again from the first missing seq, with back-off (as cli/src/follow.rs).

import { LogStore, Reassembler, applyFrame, type ServerFrame } from "./model";

export const GAP_REPAIR_MS = 2000;

export interface FollowEvents {
  onLines(): void;
  onStatus(s: Extract<ServerFrame, { type: "status" }>): void;
  onState(state: "connecting" | "live" | "reconnecting" | "ended" | "failed", detail?: string): void;
}

export interface FollowDeps {
  ticket(): Promise<string>;
  wsUrl: string;
  /** Injected for tests. */
  socket?: (url: string) => WebSocket;
}

export class Follower {
  readonly store = new LogStore();
  private parts = new Reassembler();
  private ws: WebSocket | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private failures = 0;
  private stopped = false;
  reconnects = 0;

  constructor(
    private operationId: string,
    private deps: FollowDeps,
    private ev: FollowEvents,
  ) {}

  start(): void {
    this.stopped = false;
    void this.connect();
    this.timer = setInterval(() => this.tick(), 500);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.ws?.close();
    this.ws = null;
  }

  private tick(): void {
    if (this.ws && this.store.gapFor(GAP_REPAIR_MS)) {
      this.store.gapSince = null;
      this.drop(`lines from seq ${this.store.next} are missing`);
    }
  }

  private drop(reason: string): void {
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onclose = null;
      ws.onmessage = null;
      ws.onerror = null;
      ws.close();
    }
    if (this.stopped) return;
    if (this.store.complete()) {
      this.ev.onState("ended");
      return;
    }
    this.failures++;
    if (this.failures >= 8) {
      this.ev.onState("failed", `gave up after ${this.failures} attempts: ${reason}`);
      return;
    }
    const delay = Math.min(5000, 200 * 2 ** Math.min(this.failures, 5));
    this.ev.onState("reconnecting", `${reason}; reconnecting from seq ${this.store.next}`);
    setTimeout(() => {
      if (!this.stopped) {
        this.reconnects++;
        void this.connect();
      }
    }, delay);
  }

  private async connect(): Promise<void> {
    this.ev.onState(this.reconnects ? "reconnecting" : "connecting");
    let ticket: string;
    try {
      ticket = await this.deps.ticket();
    } catch (e) {
      this.drop(`no WebSocket ticket: ${(e as Error).message}`);
      return;
    }
    if (this.stopped) return;
    const sep = this.deps.wsUrl.includes("?") ? "&" : "?";
    const url = `${this.deps.wsUrl}${sep}token=${encodeURIComponent(ticket)}`;
    let ws: WebSocket;
    try {
      ws = this.deps.socket ? this.deps.socket(url) : new WebSocket(url);
    } catch (e) {
      this.drop(`connecting: ${(e as Error).message}`);
      return;
    }
    this.ws = ws;
    const before = this.store.next;
    ws.onopen = () => {
      ws.send(JSON.stringify({ action: "subscribe", operation_id: this.operationId, from_seq: this.store.next }));
      this.ev.onState("live");
    };
    ws.onerror = () => {};
    ws.onclose = () => this.drop("the connection closed");
    ws.onmessage = (m) => {
      let f: ServerFrame;
      try {
        f = JSON.parse(typeof m.data === "string" ? m.data : "");
      } catch {
        return;
      }
      const r = applyFrame(this.store, this.parts, f);
      if (r.added) {
        // Progress resets the failure count: a long follow survives spaced-out drops.
        if (this.store.next > before) this.failures = 0;
        this.ev.onLines();
      }
      if (r.status) this.ev.onStatus(r.status);
      // One subscribe replays one page of the archive: ask for the next.
      if (r.more) {
        ws.send(JSON.stringify({ action: "subscribe", operation_id: this.operationId, from_seq: this.store.next }));
      }
      if (r.error) {
        this.stopped = true;
        ws.onclose = null;
        ws.close();
        this.ev.onState("failed", `subscription refused: ${r.error}`);
      }
      if (r.ended) {
        if (this.store.complete()) {
          ws.onclose = null;
          ws.close();
          this.ws = null;
          this.ev.onState("ended");
        } else {
          this.drop(`the log had a gap: ${this.store.next - 1} of ${this.store.lastSeq} lines`);
        }
      }
    };
  }
}

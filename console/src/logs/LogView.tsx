// A virtualized log: only the visible rows (plus overscan) are in the DOM, rows have a fixed height and
// do not wrap (long lines scroll sideways), so 50,000+ lines scroll smoothly. Follow/pause, search with
// next/previous, ANSI colours, download of the whole log as text. A complete log (the operation ended and
// every line arrived) has nothing to follow: no Follow/Pause control then.

import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { parseAnsi, type Segment } from "./ansi";
import { searchLines, type LogLine, type LogStore } from "./model";

const ROW = 18; // px, matches .log-row in styles.css
const OVERSCAN = 20;

function clock(ms: number): string {
  const d = new Date(ms);
  return `${String(d.getUTCHours()).padStart(2, "0")}:${String(d.getUTCMinutes()).padStart(2, "0")}:${String(d.getUTCSeconds()).padStart(2, "0")}.${String(d.getUTCMilliseconds()).padStart(3, "0")}`;
}

// Parsed segments per line, so scrolling back over lines does not parse them again.
const parsed = new WeakMap<LogLine, Segment[]>();

function segmentsOf(line: LogLine): Segment[] {
  let s = parsed.get(line);
  if (!s) parsed.set(line, (s = parseAnsi(line.text)));
  return s;
}

function Row({ line, current, top }: { line: LogLine; current: boolean; top: number }) {
  const segs = segmentsOf(line);
  return (
    <div class={`log-row s-${line.stream}${current ? " current" : ""}`} style={{ top: `${top}px` }} data-seq={line.seq}>
      <span class="log-seq" aria-hidden="true">{line.seq}</span>
      <span class="log-ts">{clock(line.ts)}</span>
      <span class="log-step">{line.step}</span>
      <span class="log-text">
        {segs.map((s) => {
          const style: Record<string, string> = {};
          if (s.fg) style.color = s.inverse ? "#0d1117" : s.fg;
          if (s.bg || s.inverse) style.background = s.inverse ? (s.fg ?? "#e6edf3") : s.bg!;
          if (s.bold) style.fontWeight = "700";
          if (s.italic) style.fontStyle = "italic";
          if (s.underline) style.textDecoration = "underline";
          if (s.dim) style.opacity = "0.75";
          return Object.keys(style).length ? <span style={style}>{s.text}</span> : s.text;
        })}
      </span>
    </div>
  );
}

export function LogView({ store, rev, name, complete }: { store: LogStore; rev: number; name: string; complete: boolean }) {
  const box = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(480);
  const [follow, setFollow] = useState(true);
  const [query, setQuery] = useState("");
  const [cur, setCur] = useState(0);
  const autoTop = useRef(0);
  const search = useRef<{ q: string; upto: number; hits: number[] }>({ q: "", upto: 0, hits: [] });
  const lines = store.lines;

  // Incremental search: new lines are searched once; a new query starts over.
  const hits = useMemo(() => {
    const s = search.current;
    if (s.q !== query) search.current = { q: query, upto: 0, hits: [] };
    const t = search.current;
    searchLines(lines, query, t.upto, t.hits);
    t.upto = lines.length;
    return t.hits.slice();
  }, [query, rev]);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setHeight(el.clientHeight));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  useEffect(() => {
    const el = box.current;
    if (follow && el) {
      el.scrollTop = el.scrollHeight;
      autoTop.current = el.scrollTop;
      setScrollTop(el.scrollTop);
    }
  }, [rev, follow]);

  const jump = (i: number) => {
    if (!hits.length) return;
    const n = ((i % hits.length) + hits.length) % hits.length;
    setCur(n);
    setFollow(false);
    const el = box.current;
    if (el) {
      el.scrollTop = Math.max(0, hits[n] * ROW - el.clientHeight / 2);
      setScrollTop(el.scrollTop);
    }
  };

  const onScroll = () => {
    const el = box.current!;
    setScrollTop(el.scrollTop);
    // Only a scroll up by the user pauses (growth of the log never moves scrollTop by itself).
    if (follow && el.scrollTop < autoTop.current - 4) setFollow(false);
  };

  const download = () => {
    const blob = new Blob([store.toText()], { type: "text/plain;charset=utf-8" });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = `${name}.log`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  };

  const first = Math.max(0, Math.floor(scrollTop / ROW) - OVERSCAN);
  const last = Math.min(lines.length, Math.ceil((scrollTop + height) / ROW) + OVERSCAN);
  const currentIdx = hits.length ? hits[Math.min(cur, hits.length - 1)] : -1;
  const rows = [];
  for (let i = first; i < last; i++) rows.push(<Row key={lines[i].seq} line={lines[i]} top={i * ROW} current={i === currentIdx} />);

  return (
    <div class="logview">
      <div class="toolbar" role="toolbar" aria-label="Log controls">
        {complete ? null : (
          <button type="button" aria-pressed={follow} onClick={() => setFollow(!follow)}>
            {follow ? "Pause" : "Follow"}
          </button>
        )}
        <label>
          Search log{" "}
          <input
            type="search"
            value={query}
            onInput={(e) => { setQuery((e.target as HTMLInputElement).value); setCur(0); }}
            onKeyDown={(e) => { if (e.key === "Enter") { e.preventDefault(); jump(cur + (e.shiftKey ? -1 : 1)); } }}
          />
        </label>
        <button type="button" class="secondary" disabled={!hits.length} onClick={() => jump(cur - 1)} aria-label="Previous match">↑</button>
        <button type="button" class="secondary" disabled={!hits.length} onClick={() => jump(cur + 1)} aria-label="Next match">↓</button>
        <span class="help" aria-live="polite">
          {query ? (hits.length ? `${Math.min(cur, hits.length - 1) + 1} of ${hits.length} matches` : "No matches") : `${lines.length} lines`}
        </span>
        <button type="button" class="secondary" onClick={download} disabled={!lines.length}>
          Download log{complete ? "" : " (so far)"}
        </button>
      </div>
      <div class="log" ref={box} onScroll={onScroll} tabIndex={0} role="log" aria-live="off" aria-label={`Log of ${name}, ${lines.length} lines`}>
        <div style={{ height: `${lines.length * ROW}px`, position: "relative" }}>{rows}</div>
      </div>
    </div>
  );
}

// Small shared pieces: links, state badges, problem boxes, list-table heads, polling, dates, durations.

import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { linkClick } from "./router";
import { problemText, type Problem } from "./api/client";
import { statusLabel } from "./approval";

export function Link(props: { href: string; children: ComponentChildren; class?: string; "aria-label"?: string; "data-testid"?: string; "aria-current"?: "page"; title?: string }) {
  return (
    <a href={props.href} class={props.class} aria-label={props["aria-label"]} data-testid={props["data-testid"]} aria-current={props["aria-current"]} title={props.title} onClick={linkClick}>
      {props.children}
    </a>
  );
}

export function StateBadge({ state }: { state: string }) {
  return <span class={`badge badge-${state.toLowerCase()}`}>{statusLabel(state)}</span>;
}

/** A list table's caption (read by screen readers only) and its one row of column headers; a `null` column is
 * left out (a column only some readers see). */
export function ListHead({ caption, columns }: { caption: ComponentChildren; columns: (ComponentChildren | null)[] }) {
  return (
    <>
      <caption class="sr-only">{caption}</caption>
      <thead>
        <tr>
          {columns.filter((c) => c !== null).map((c, i) => (
            <th scope="col" key={i}>{c}</th>
          ))}
        </tr>
      </thead>
    </>
  );
}

export function ProblemBox({ problem, label }: { problem: Problem | string | null; label?: string }) {
  if (!problem) return null;
  return (
    <div class="problem" role="alert">
      {label ? <strong>{label}: </strong> : null}
      {typeof problem === "string" ? problem : problemText(problem)}
    </div>
  );
}

export function when(ts?: string | null): string {
  if (!ts) return "—";
  const d = new Date(ts);
  return Number.isNaN(d.getTime()) ? ts : d.toLocaleString();
}

export function duration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s % 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** Runs `load` now and every `everyMs` while `active`; the latest result wins. */
export function usePoll<T>(load: (signal: AbortSignal) => Promise<T>, everyMs: number, deps: unknown[], active = true) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<Problem | string | null>(null);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    const ctl = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      try {
        const d = await loadRef.current(ctl.signal);
        if (!ctl.signal.aborted) {
          setData(d);
          setError(null);
        }
      } catch (e) {
        if (!ctl.signal.aborted) setError(e instanceof Error ? e.message : (e as Problem));
      }
      if (!ctl.signal.aborted && active && everyMs > 0) timer = setTimeout(run, everyMs);
    };
    void run();
    return () => {
      ctl.abort();
      clearTimeout(timer);
    };
  }, [...deps, active, tick]);
  return { data, error, reload: () => setTick((t) => t + 1), setData };
}

/** Moves focus to the page's heading when a page opens (screen readers hear the new page). */
export function PageTitle({ children }: { children: ComponentChildren }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    ref.current?.focus();
    document.title = `${ref.current?.textContent ?? ""} · Strato console`;
  }, []);
  return (
    <h1 tabIndex={-1} ref={ref}>
      {children}
    </h1>
  );
}

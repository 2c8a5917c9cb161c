// A listing read page by page where each page reads at most `limit` items and filters what it read (the
// operator's listings across tenants): a page can be short — even empty — and still have more behind it.
// The first page is polled; "Load more" appends the pages after it until the filters change.

import { useState } from "preact/hooks";
import { usePoll } from "../ui";

export type Page<Row> = { rows: Row[]; next?: string | null };

export function usePagedList<Row>(read: (next: string | undefined, signal?: AbortSignal) => Promise<Page<Row>>, everyMs: number, deps: unknown[]) {
  const [more, setMore] = useState<Row[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const first = usePoll((signal) => read(undefined, signal), everyMs, deps);
  const rows = [...(first.data?.rows ?? []), ...more];
  const cursor = more.length ? next : (first.data?.next ?? null);
  return {
    rows,
    cursor,
    loaded: first.data !== null,
    error: first.error,
    /** The page after what is shown. */
    loadMore: async () => {
      if (!cursor) return;
      const page = await read(cursor);
      setMore((m) => [...m, ...page.rows]);
      setNext(page.next ?? null);
    },
    /** Back to the first page only (the filters changed). */
    reset: () => {
      setMore([]);
      setNext(null);
    },
  };
}

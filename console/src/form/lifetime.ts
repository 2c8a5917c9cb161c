// A cluster's lifetime as typed (create's optional `ttl_hours`, the cluster page's "delete after") and how long
// until its deletion, for display. Pure, so the unit tests need no browser.

// `ttl_hours` on create: empty (no expiry), or a whole number of hours of at least 1.
export function validateTtl(raw: string): string[] {
  const s = raw.trim();
  if (!s) return [];
  const n = Number(s);
  return Number.isInteger(n) && n >= 1 ? [] : ["a whole number of hours, at least 1 (or empty: no expiry)"];
}

// Hours for "delete N hours from now": required, a whole number of at least 1.
export function validateHours(raw: string): string[] {
  const n = Number(raw.trim());
  return raw.trim() && Number.isInteger(n) && n >= 1 ? [] : ["a whole number of hours, at least 1"];
}

// "in 45 min", "in 3 h 30 min", "in 5 days" or "due now", from `now` until `at`.
export function untilText(at: string, now: number = Date.now()): string {
  const ms = Date.parse(at) - now;
  if (Number.isNaN(ms)) return "";
  if (ms <= 0) return "due now";
  const min = Math.round(ms / 60000);
  if (min < 60) return `in ${min} min`;
  const h = Math.floor(min / 60);
  return h < 48 ? `in ${h} h ${min % 60} min` : `in ${Math.floor(h / 24)} days`;
}

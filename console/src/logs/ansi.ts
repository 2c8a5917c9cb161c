// ANSI escape sequences → styled segments. SGR (colours, bold, dim, italic, underline, inverse) is
// rendered; every other CSI/OSC sequence is dropped so it never shows as garbage.

export interface Style {
  fg?: string;
  bg?: string;
  bold?: boolean;
  dim?: boolean;
  italic?: boolean;
  underline?: boolean;
  inverse?: boolean;
}

export interface Segment extends Style {
  text: string;
}

// The 16 basic colours, picked to stay readable (contrast ≥ 4.5:1) on the log's dark background.
export const PALETTE16 = [
  "#8b949e", "#ff7b72", "#7ee787", "#e3b341", "#79c0ff", "#d2a8ff", "#56d4dd", "#e6edf3",
  "#a5acb5", "#ffa198", "#aff5b4", "#f8e3a1", "#a5d6ff", "#e2c5ff", "#b3f0ff", "#ffffff",
];

function color256(n: number): string | undefined {
  if (n < 0 || n > 255 || !Number.isInteger(n)) return undefined;
  if (n < 16) return PALETTE16[n];
  if (n < 232) {
    const i = n - 16;
    const lv = [0, 95, 135, 175, 215, 255];
    return `rgb(${lv[Math.floor(i / 36)]},${lv[Math.floor(i / 6) % 6]},${lv[i % 6]})`;
  }
  const g = 8 + (n - 232) * 10;
  return `rgb(${g},${g},${g})`;
}

/** Applies one SGR parameter list to `s` (mutated). */
export function applySgr(s: Style, params: number[]): void {
  if (params.length === 0) params = [0];
  for (let i = 0; i < params.length; i++) {
    const p = params[i];
    if (p === 0) {
      for (const k of Object.keys(s)) delete (s as Record<string, unknown>)[k];
    } else if (p === 1) s.bold = true;
    else if (p === 2) s.dim = true;
    else if (p === 3) s.italic = true;
    else if (p === 4) s.underline = true;
    else if (p === 7) s.inverse = true;
    else if (p === 22) { delete s.bold; delete s.dim; }
    else if (p === 23) delete s.italic;
    else if (p === 24) delete s.underline;
    else if (p === 27) delete s.inverse;
    else if (p >= 30 && p <= 37) s.fg = PALETTE16[p - 30];
    else if (p === 39) delete s.fg;
    else if (p >= 40 && p <= 47) s.bg = PALETTE16[p - 40];
    else if (p === 49) delete s.bg;
    else if (p >= 90 && p <= 97) s.fg = PALETTE16[p - 90 + 8];
    else if (p >= 100 && p <= 107) s.bg = PALETTE16[p - 100 + 8];
    else if (p === 38 || p === 48) {
      let c: string | undefined;
      if (params[i + 1] === 5) {
        c = color256(params[i + 2]);
        i += 2;
      } else if (params[i + 1] === 2) {
        const [r, g, b] = params.slice(i + 2, i + 5);
        if ([r, g, b].every((v) => Number.isInteger(v) && v >= 0 && v <= 255)) c = `rgb(${r},${g},${b})`;
        i += 4;
      }
      if (c) {
        if (p === 38) s.fg = c;
        else s.bg = c;
      }
    }
  }
}

// CSI: ESC [ params intermediates final; OSC: ESC ] ... (BEL | ESC \); other two-byte escapes.
const ESC_RE = /\x1b(?:\[([0-9;:?]*)[ -\/]*([@-~])|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])/g;

/** Splits `text` into styled segments, starting from `initial` (lines do not carry state to the next). */
export function parseAnsi(text: string, initial: Style = {}): Segment[] {
  const out: Segment[] = [];
  const style: Style = { ...initial };
  let last = 0;
  const push = (t: string) => {
    if (!t) return;
    const prev = out[out.length - 1];
    if (prev && sameStyle(prev, style)) prev.text += t;
    else out.push({ ...style, text: t });
  };
  if (text.indexOf("\x1b") < 0) return text ? [{ ...style, text }] : [];
  ESC_RE.lastIndex = 0;
  for (let m = ESC_RE.exec(text); m; m = ESC_RE.exec(text)) {
    push(text.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[2] === "m") {
      const params = (m[1] ?? "").split(/[;:]/).filter((x) => x !== "").map(Number);
      applySgr(style, params);
    }
  }
  push(text.slice(last));
  return out;
}

function sameStyle(a: Style, b: Style): boolean {
  return (
    a.fg === b.fg && a.bg === b.bg && !!a.bold === !!b.bold && !!a.dim === !!b.dim &&
    !!a.italic === !!b.italic && !!a.underline === !!b.underline && !!a.inverse === !!b.inverse
  );
}

/** The text without escape sequences (search, download). */
export function stripAnsi(text: string): string {
  if (text.indexOf("\x1b") < 0) return text;
  return text.replace(ESC_RE, "");
}

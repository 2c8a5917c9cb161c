// The plan summary of an operation (+N ~N −N): the approval's counts when the operation has one, else
// read from Terraform's own "Plan: N to add, N to change, N to destroy." / "No changes." lines in the log
// (the operation record has no summary of its own). The last such line of each step counts (a replan in
// the same step replaces the earlier one); steps are added up (one plan per stage).

export interface PlanCounts {
  add: number;
  change: number;
  destroy: number;
}

// ANSI escape sequences (Terraform colours its summary).
// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g;
const PLAN = /Plan: (\d+) to add, (\d+) to change, (\d+) to destroy/;
const NO_CHANGES = /No changes\.\s/;

export function planFromLog(lines: readonly { step: string; text: string }[]): PlanCounts | null {
  const byStep = new Map<string, PlanCounts>();
  for (const l of lines) {
    const t = l.text.replace(ANSI, "");
    const m = PLAN.exec(t);
    if (m) byStep.set(l.step, { add: Number(m[1]), change: Number(m[2]), destroy: Number(m[3]) });
    else if (NO_CHANGES.test(`${t} `)) byStep.set(l.step, { add: 0, change: 0, destroy: 0 });
  }
  if (!byStep.size) return null;
  const sum = { add: 0, change: 0, destroy: 0 };
  for (const c of byStep.values()) {
    sum.add += c.add;
    sum.change += c.change;
    sum.destroy += c.destroy;
  }
  return sum;
}

/** "+3 ~1 −0" */
export function planBadge(c: PlanCounts): string {
  return `+${c.add} ~${c.change} −${c.destroy}`;
}

/** "3 to add, 1 to change, 0 to destroy", or "no changes". */
export function planWords(c: PlanCounts): string {
  return c.add + c.change + c.destroy === 0 ? "no changes" : `${c.add} to add, ${c.change} to change, ${c.destroy} to destroy`;
}

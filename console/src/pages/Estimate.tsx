import type { Schemas } from "../api/client";

export function money(n: number, currency: string): string {
  try {
    return new Intl.NumberFormat(undefined, { style: "currency", currency }).format(n);
  } catch {
    return `${n.toFixed(2)} ${currency}`;
  }
}

type Row = { address?: string; monthly?: number; [k: string]: unknown };

/** Resources that cost money (most expensive first) and those that do not (folded away). */
export function splitByCost(resources: readonly Row[]): { paid: Row[]; free: Row[] } {
  const paid = resources.filter((r) => typeof r.monthly === "number" && r.monthly > 0);
  const free = resources.filter((r) => !(typeof r.monthly === "number" && r.monthly > 0));
  paid.sort((a, b) => (b.monthly as number) - (a.monthly as number));
  return { paid, free };
}

export function EstimateView({ e }: { e: Schemas["CostEstimate"] }) {
  const { paid, free } = splitByCost(e.resources as Row[]);
  return (
    <div>
      <p class="total">
        Total: <strong>{money(e.total_monthly, e.currency)}</strong> per month
      </p>
      {paid.length ? (
        <table class="list cost">
          <caption class="sr-only">Monthly cost of the resources that cost money, most expensive first</caption>
          <thead>
            <tr>
              <th scope="col">Resource</th>
              <th scope="col" class="num">Monthly</th>
            </tr>
          </thead>
          <tbody>
            {paid.map((r) => (
              <tr>
                <td><code>{String(r.address ?? "?")}</code></td>
                <td class="num">{money(r.monthly as number, e.currency)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : <p class="help">No resource costs money.</p>}
      {free.length ? (
        <details class="help" data-testid="free-resources">
          <summary>{free.length} more resource{free.length === 1 ? "" : "s"} with no monthly cost</summary>
          <ul class="plain">{free.map((r) => <li><code>{String(r.address ?? "?")}</code></li>)}</ul>
        </details>
      ) : null}
      {e.not_estimated.length ? <p class="help">Not estimated: {e.not_estimated.join(", ")}</p> : null}
      <p class="help">
        Prices from {e.price_table_source}, {e.price_table_date}.
      </p>
    </div>
  );
}

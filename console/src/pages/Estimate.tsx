import type { Schemas } from "../api/client";

export function money(n: number, currency: string): string {
  try {
    return new Intl.NumberFormat(undefined, { style: "currency", currency }).format(n);
  } catch {
    return `${n.toFixed(2)} ${currency}`;
  }
}

export function EstimateView({ e }: { e: Schemas["CostEstimate"] }) {
  const resources = e.resources as { address?: string; monthly?: number; [k: string]: unknown }[];
  return (
    <div>
      <p class="total">
        Total: <strong>{money(e.total_monthly, e.currency)}</strong> per month
      </p>
      <table class="list">
        <caption class="sr-only">Monthly cost by resource</caption>
        <thead>
          <tr>
            <th scope="col">Resource</th>
            <th scope="col">Monthly</th>
          </tr>
        </thead>
        <tbody>
          {resources.map((r) => (
            <tr>
              <td><code>{String(r.address ?? "?")}</code></td>
              <td>{typeof r.monthly === "number" ? money(r.monthly, e.currency) : "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {e.not_estimated.length ? <p class="help">Not estimated: {e.not_estimated.join(", ")}</p> : null}
      <p class="help">
        Prices from {e.price_table_source}, {e.price_table_date}.
      </p>
    </div>
  );
}

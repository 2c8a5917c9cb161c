// GET /console.json: where the WebSocket API is and how to sign in.

export type AuthConfig =
  | { kind: "token" }
  | { kind: "oidc"; issuer: string; client_id: string; scope?: string };

export interface ConsoleConfig {
  ws_endpoint: string | null;
  auth: AuthConfig;
}

let config: ConsoleConfig = { ws_endpoint: null, auth: { kind: "token" } };

export async function loadConfig(): Promise<ConsoleConfig> {
  try {
    const r = await fetch("/console.json", { headers: { Accept: "application/json" } });
    if (r.ok) {
      const c = (await r.json()) as Partial<ConsoleConfig>;
      config = { ws_endpoint: c.ws_endpoint ?? null, auth: c.auth ?? { kind: "token" } };
    }
  } catch {
    // No /console.json (e.g. `vite dev` without STRATO_API): token sign-in, no live logs.
  }
  return config;
}

export function getConfig(): ConsoleConfig {
  return config;
}

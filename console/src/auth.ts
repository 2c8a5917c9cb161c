// Sign-in. The token lives in memory only (a reload signs out). Sources: the URL fragment `#token=`
// (devstack's login link; removed from the URL at once), the paste-a-token page, or OIDC authorization
// code + PKCE against the issuer's discovery document when /console.json says `auth.kind = "oidc"`.

import type { AuthConfig } from "./config";

let token: string | null = null;
let listeners: ((t: string | null, why?: string) => void)[] = [];

export function currentToken(): string | null {
  return token;
}

export function setToken(t: string | null, why?: string): void {
  token = t;
  for (const l of listeners) l(t, why);
}

export function signOut(why?: string): void {
  if (token !== null) setToken(null, why);
}

export function onTokenChange(l: (t: string | null, why?: string) => void): () => void {
  listeners.push(l);
  return () => {
    listeners = listeners.filter((x) => x !== l);
  };
}

/** Takes `#token=` from the URL and removes it (history.replaceState, so it stays out of history). */
export function takeFragmentToken(): string | null {
  const h = location.hash.replace(/^#/, "");
  const p = new URLSearchParams(h);
  const t = p.get("token");
  if (!t) return null;
  p.delete("token");
  const rest = p.toString();
  history.replaceState(history.state, "", location.pathname + location.search + (rest ? `#${rest}` : ""));
  return t;
}

/** The `sub` and `exp` of a JWT, for display only (the API verifies it). */
export function tokenClaims(t: string): { sub?: string; exp?: number; tenant?: string } {
  try {
    const b = t.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(b + "=".repeat((4 - (b.length % 4)) % 4)));
  } catch {
    return {};
  }
}

// ---- OIDC authorization code + PKCE ------------------------------------------------------------------

type Oidc = Extract<AuthConfig, { kind: "oidc" }>;
const PKCE_KEY = "strato.pkce"; // the verifier and state survive the redirect; never the tokens

function b64url(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export async function pkceChallenge(verifier: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return b64url(new Uint8Array(d));
}

async function discovery(issuer: string): Promise<{ authorization_endpoint: string; token_endpoint: string }> {
  const r = await fetch(`${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`);
  if (!r.ok) throw new Error(`the issuer's discovery document answered HTTP ${r.status}`);
  return r.json();
}

function redirectUri(): string {
  return `${location.origin}/`;
}

/** Sends the browser to the issuer's authorization endpoint. */
export async function oidcSignIn(cfg: Oidc, returnTo: string): Promise<void> {
  const d = await discovery(cfg.issuer);
  const verifier = b64url(crypto.getRandomValues(new Uint8Array(48)));
  const state = b64url(crypto.getRandomValues(new Uint8Array(16)));
  sessionStorage.setItem(PKCE_KEY, JSON.stringify({ verifier, state, returnTo }));
  const u = new URL(d.authorization_endpoint);
  u.search = new URLSearchParams({
    response_type: "code",
    client_id: cfg.client_id,
    redirect_uri: redirectUri(),
    scope: cfg.scope ?? "openid",
    state,
    code_challenge: await pkceChallenge(verifier),
    code_challenge_method: "S256",
  }).toString();
  location.assign(u.toString());
}

/** Completes a sign-in when the URL carries `?code=&state=`; returns the path to go back to. */
export async function oidcCallback(cfg: Oidc): Promise<string | null> {
  const q = new URLSearchParams(location.search);
  const code = q.get("code");
  const err = q.get("error");
  if (!code && !err) return null;
  const saved = JSON.parse(sessionStorage.getItem(PKCE_KEY) ?? "null") as { verifier: string; state: string; returnTo: string } | null;
  sessionStorage.removeItem(PKCE_KEY);
  history.replaceState(null, "", location.pathname);
  if (err) throw new Error(`sign-in refused: ${err} ${q.get("error_description") ?? ""}`);
  if (!saved || saved.state !== q.get("state")) throw new Error("sign-in state mismatch; try again");
  const d = await discovery(cfg.issuer);
  const r = await fetch(d.token_endpoint, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: code!,
      redirect_uri: redirectUri(),
      client_id: cfg.client_id,
      code_verifier: saved.verifier,
    }),
  });
  if (!r.ok) throw new Error(`the token endpoint answered HTTP ${r.status}`);
  const t = (await r.json()) as { access_token?: string; id_token?: string };
  const jwt = t.access_token ?? t.id_token;
  if (!jwt) throw new Error("the token endpoint returned no token");
  setToken(jwt);
  return saved.returnTo || "/clusters";
}

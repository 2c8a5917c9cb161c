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
export function tokenClaims(t: string): { sub?: string; exp?: number; tenant?: string; scope?: string; [claim: string]: unknown } {
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
  let r: Response;
  try {
    r = await fetch(`${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`);
  } catch (e) {
    // A network error, a missing CORS header or the page's CSP (connect-src) look the same from here.
    throw new Error(
      `could not reach the identity provider ${issuer} (${(e as Error).message}); it must answer with CORS headers and be allowed by the page's connect-src`,
    );
  }
  if (!r.ok) throw new Error(`the issuer's discovery document answered HTTP ${r.status}`);
  const d = (await r.json()) as { issuer?: string; authorization_endpoint: string; token_endpoint: string };
  checkDiscovery(issuer, d);
  return d;
}

/** OpenID Connect Discovery 1.0 §4.3: the document's `issuer` must be the one configured (modulo a trailing
 *  slash); it must name both endpoints. */
export function checkDiscovery(issuer: string, d: { issuer?: string; authorization_endpoint?: string; token_endpoint?: string }): void {
  const norm = (s: string) => s.replace(/\/+$/, "");
  if (!d.issuer || norm(d.issuer) !== norm(issuer)) throw new Error(`the discovery document names issuer ${d.issuer ?? "(none)"}, not ${issuer}`);
  if (!d.authorization_endpoint || !d.token_endpoint) throw new Error("the discovery document has no authorization or token endpoint");
}

/** A sign-in that failed after the redirect back; `returnTo` is where the user was going. */
export class SignInError extends Error {
  constructor(
    message: string,
    readonly returnTo: string = "/clusters",
  ) {
    super(message);
  }
}

/** A readable message for a token endpoint's error answer (RFC 6749 §5.2: `error`, `error_description`). */
export function tokenErrorText(status: number, body: unknown): string {
  const b = (body && typeof body === "object" ? body : {}) as { error?: unknown; error_description?: unknown };
  const code = typeof b.error === "string" ? b.error : "";
  const desc = typeof b.error_description === "string" ? b.error_description : "";
  const what = [code, desc].filter(Boolean).join(": ");
  return `the identity provider did not issue a token (HTTP ${status}${what ? `, ${what}` : ""}); try again`;
}

/** A readable message for an error redirect from the authorization endpoint (RFC 6749 §4.1.2.1). */
export function authorizeErrorText(q: URLSearchParams): string {
  const desc = q.get("error_description");
  return `the identity provider refused the sign-in (${q.get("error")}${desc ? `: ${desc}` : ""})`;
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

/** Completes a sign-in when the URL carries `?code=&state=` (or `?error=`); returns the path to go back to.
 *  Throws a `SignInError` (with where the user was going) when the sign-in failed. The code, state and the
 *  saved verifier are removed in every case. */
export async function oidcCallback(cfg: Oidc): Promise<string | null> {
  const q = new URLSearchParams(location.search);
  const code = q.get("code");
  const err = q.get("error");
  if (!code && !err) return null;
  let saved: { verifier: string; state: string; returnTo: string } | null = null;
  try {
    saved = JSON.parse(sessionStorage.getItem(PKCE_KEY) ?? "null");
  } catch {
    saved = null;
  }
  sessionStorage.removeItem(PKCE_KEY);
  history.replaceState(null, "", location.pathname);
  const back = saved?.returnTo || "/clusters";
  // An error answer grants nothing, so it is shown whatever its state (some providers omit it).
  if (err) throw new SignInError(authorizeErrorText(q), back);
  if (!saved || saved.state !== q.get("state")) throw new SignInError("the sign-in answer does not match the sign-in this tab started (state mismatch); try again", back);
  let t: { access_token?: string; id_token?: string };
  try {
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
    if (!r.ok) throw new SignInError(tokenErrorText(r.status, await r.json().catch(() => null)), back);
    t = await r.json();
  } catch (e) {
    if (e instanceof SignInError) throw e;
    throw new SignInError(`could not reach the identity provider's token endpoint (${(e as Error).message})`, back);
  }
  const jwt = t.access_token ?? t.id_token;
  if (!jwt) throw new SignInError("the token endpoint returned no token", back);
  setToken(jwt);
  return back;
}

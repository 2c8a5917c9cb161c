// End-to-end check of the console's OIDC sign-in (authorization code + PKCE S256) in headless chromium,
// without devstack. In-process, on 127.0.0.1 random ports:
//   - a mock OpenID provider: discovery, /authorize (checks response_type, client_id, redirect_uri, state,
//     code_challenge + S256, then redirects back with code + state), /token (form POST, CORS for the
//     console's origin; checks grant_type, code, redirect_uri, client_id and BASE64URL(SHA256(verifier)) ==
//     challenge; anything else is a 400 whose reason is recorded);
//   - the console: dist/ (SPA fallback), /console.json with auth.kind = "oidc" at the mock provider, and a
//     fake /v1/clusters + /v1/templates that answer 200 only to `Bearer <the issued access token>`.
// Scenarios: sign in as a user would → clusters page loads with the issued token, code/state gone from the
// URL, nothing token-like in localStorage/sessionStorage/cookies; then a tampered state, a /token 400 and an
// IdP error each leave the user on the sign-in page with a readable error.
// Env: CHROMIUM (default `command -v chromium`). Screenshots: e2e/artifacts/oidc-*.png.
// Usage: npm run build && node e2e/oidc.mjs
import { execSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { chromium } from "playwright-core";

const DIST = new URL("../dist/", import.meta.url).pathname;
const ART = new URL("./artifacts/", import.meta.url).pathname;
const CLIENT_ID = "strato-console-e2e";
const CALLBACK_PATH = "/"; // the console's redirect_uri is its origin + "/"

function fail(msg) {
  console.error(`e2e:oidc FAILED: ${msg}`);
  process.exit(1);
}
const step = (s) => console.log(`• ${s}`);
const ok = (cond, msg) => {
  if (!cond) throw new Error(msg);
  console.log(`  ok: ${msg}`);
};

if (!fs.existsSync(path.join(DIST, "index.html"))) fail("no dist/index.html — run `npm run build` first");
let exe = process.env.CHROMIUM;
if (!exe) {
  try { exe = execSync("command -v chromium || command -v chromium-browser", { shell: "/bin/sh" }).toString().trim(); } catch { /* below */ }
}
if (!exe) fail("no chromium found (set CHROMIUM)");
fs.mkdirSync(ART, { recursive: true });

const b64url = (buf) => Buffer.from(buf).toString("base64url");
const listen = (srv) => new Promise((r) => srv.listen(0, "127.0.0.1", () => r(srv.address().port)));
async function readBody(req) {
  let s = "";
  for await (const c of req) s += c;
  return s;
}

// ---- the mock OpenID provider ------------------------------------------------------------------------

const op = {
  mode: "ok", // "ok" | "tamper-state" | "token-400" | "idp-error"
  authorizations: [], // { state, challenge, redirect_uri, code }
  tokenRequests: [], // { ok, why, params }
  refusals: [], // why any endpoint said 400
  issued: [], // access tokens handed out
  codes: new Map(), // code → { challenge, redirect_uri, client_id, used }
};
let issuer = "";
let consoleOrigin = "";

function jwtLike(claims) {
  const h = b64url(JSON.stringify({ alg: "RS256", typ: "JWT", kid: "mock" }));
  const p = b64url(JSON.stringify({ iss: issuer, aud: CLIENT_ID, iat: Math.floor(Date.now() / 1000), exp: Math.floor(Date.now() / 1000) + 3600, ...claims }));
  return `${h}.${p}.${b64url(randomBytes(64))}`;
}

function cors(res) {
  res.setHeader("Access-Control-Allow-Origin", consoleOrigin);
  res.setHeader("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  res.setHeader("Access-Control-Allow-Headers", "Content-Type, Authorization");
  res.setHeader("Vary", "Origin");
}
function json(res, status, body, extra = {}) {
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store", ...extra });
  res.end(JSON.stringify(body));
}
function refuse(res, where, why, { asJson = true } = {}) {
  op.refusals.push(`${where}: ${why}`);
  if (asJson) return json(res, 400, { error: "invalid_request", error_description: why });
  res.writeHead(400, { "content-type": "text/plain" });
  res.end(why);
}

const opServer = http.createServer(async (req, res) => {
  const url = new URL(req.url, issuer);
  if (req.method === "OPTIONS") {
    cors(res);
    res.writeHead(204);
    return res.end();
  }
  if (url.pathname === "/.well-known/openid-configuration" && req.method === "GET") {
    cors(res);
    return json(res, 200, {
      issuer,
      authorization_endpoint: `${issuer}/authorize`,
      token_endpoint: `${issuer}/token`,
      jwks_uri: `${issuer}/jwks`,
      response_types_supported: ["code"],
      subject_types_supported: ["public"],
      id_token_signing_alg_values_supported: ["RS256"],
      code_challenge_methods_supported: ["S256"],
      grant_types_supported: ["authorization_code"],
      token_endpoint_auth_methods_supported: ["none"],
    });
  }
  if (url.pathname === "/jwks") {
    cors(res);
    return json(res, 200, { keys: [] });
  }
  if (url.pathname === "/authorize" && req.method === "GET") {
    const q = url.searchParams;
    const expectRedirect = `${consoleOrigin}${CALLBACK_PATH}`;
    if (q.get("response_type") !== "code") return refuse(res, "authorize", `response_type=${q.get("response_type")}`, { asJson: false });
    if (q.get("client_id") !== CLIENT_ID) return refuse(res, "authorize", `client_id=${q.get("client_id")}`, { asJson: false });
    if (q.get("redirect_uri") !== expectRedirect) return refuse(res, "authorize", `redirect_uri=${q.get("redirect_uri")} (want ${expectRedirect})`, { asJson: false });
    if (!q.get("state")) return refuse(res, "authorize", "no state", { asJson: false });
    if (!q.get("scope")?.split(" ").includes("openid")) return refuse(res, "authorize", `scope=${q.get("scope")}`, { asJson: false });
    if (q.get("code_challenge_method") !== "S256") return refuse(res, "authorize", `code_challenge_method=${q.get("code_challenge_method")}`, { asJson: false });
    if (!/^[A-Za-z0-9_-]{43}$/.test(q.get("code_challenge") ?? "")) return refuse(res, "authorize", `code_challenge=${q.get("code_challenge")}`, { asJson: false });
    const back = new URL(q.get("redirect_uri"));
    if (op.mode === "idp-error") {
      back.searchParams.set("error", "access_denied");
      back.searchParams.set("error_description", "The user said no");
      back.searchParams.set("state", q.get("state"));
    } else {
      const code = b64url(randomBytes(24));
      op.codes.set(code, { challenge: q.get("code_challenge"), redirect_uri: q.get("redirect_uri"), client_id: q.get("client_id"), used: false });
      back.searchParams.set("code", code);
      back.searchParams.set("state", op.mode === "tamper-state" ? `${q.get("state")}x` : q.get("state"));
      op.authorizations.push({ state: q.get("state"), challenge: q.get("code_challenge"), code });
    }
    res.writeHead(302, { location: back.toString(), "cache-control": "no-store" });
    return res.end();
  }
  if (url.pathname === "/token" && req.method === "POST") {
    cors(res);
    const ctype = req.headers["content-type"] ?? "";
    const raw = await readBody(req);
    const p = Object.fromEntries(new URLSearchParams(raw));
    const rec = { ok: false, why: "", params: p };
    op.tokenRequests.push(rec);
    const no = (why, error = "invalid_grant") => {
      rec.why = why;
      op.refusals.push(`token: ${why}`);
      return json(res, 400, { error, error_description: why });
    };
    if (!ctype.startsWith("application/x-www-form-urlencoded")) return no(`content-type ${ctype}`, "invalid_request");
    if (p.grant_type !== "authorization_code") return no(`grant_type=${p.grant_type}`, "unsupported_grant_type");
    const c = op.codes.get(p.code);
    if (!c) return no("unknown code");
    if (c.used) return no("code already used");
    c.used = true;
    if (p.client_id !== c.client_id) return no(`client_id=${p.client_id}`, "invalid_client");
    if (p.redirect_uri !== c.redirect_uri) return no(`redirect_uri=${p.redirect_uri} (authorize had ${c.redirect_uri})`);
    if (!p.code_verifier || !/^[A-Za-z0-9._~-]{43,128}$/.test(p.code_verifier)) return no(`code_verifier malformed: ${p.code_verifier}`);
    const s256 = b64url(createHash("sha256").update(p.code_verifier).digest());
    if (s256 !== c.challenge) return no(`PKCE: BASE64URL(SHA256(verifier))=${s256} != challenge ${c.challenge}`);
    if (op.mode === "token-400") return no("the authorization code has expired (forced by the test)");
    rec.ok = true;
    rec.verifierMatched = true;
    const access = jwtLike({ sub: "oidc-alice", tenant: "tenant-oidc", token_use: "access", client_id: CLIENT_ID });
    op.issued.push(access);
    return json(res, 200, { access_token: access, id_token: jwtLike({ sub: "oidc-alice", email: "alice@example.com" }), token_type: "Bearer", expires_in: 3600 });
  }
  res.writeHead(404);
  res.end();
});

// ---- the console (dist/ + /console.json + a fake API) -------------------------------------------------

const apiAuth = []; // every Authorization header the fake API saw (null when absent)
const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css", ".map": "application/json", ".svg": "image/svg+xml", ".json": "application/json" };
const problem = (res, status, title, detail) => {
  res.writeHead(status, { "content-type": "application/problem+json" });
  res.end(JSON.stringify({ type: `urn:strato:problem:${title.toLowerCase()}`, title, status, detail }));
};
let strictCsp = false; // true: devstack's policy unchanged (connect-src 'self' ws: wss:)
function csp() {
  if (strictCsp) return "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";
  // devstack's policy (devstack/src/console.rs), with the issuer added to connect-src: the browser fetches
  // the discovery document and the token endpoint itself, so whatever serves an OIDC console must allow it.
  return `default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self' ws: wss: ${issuer}; frame-ancestors 'none'; base-uri 'none'; form-action 'self'`;
}

const consoleServer = http.createServer(async (req, res) => {
  const url = new URL(req.url, consoleOrigin);
  if (url.pathname === "/console.json") {
    res.writeHead(200, { "content-type": "application/json", "cache-control": "no-cache" });
    return res.end(JSON.stringify({ ws_endpoint: null, auth: { kind: "oidc", issuer, client_id: CLIENT_ID, scope: "openid" } }));
  }
  if (url.pathname.startsWith("/v1/")) {
    const h = req.headers.authorization ?? null;
    apiAuth.push(h);
    const m = /^Bearer (.+)$/.exec(h ?? "");
    if (!m || !op.issued.includes(m[1])) return problem(res, 401, "Unauthorized", "no valid bearer token");
    if (url.pathname === "/v1/clusters" && req.method === "GET") {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(JSON.stringify({ clusters: [], next: null }));
    }
    if (url.pathname === "/v1/templates" && req.method === "GET") {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(JSON.stringify({ templates: [] }));
    }
    return problem(res, 404, "NotFound", url.pathname);
  }
  const rel = path.normalize(decodeURIComponent(url.pathname)).replace(/^(\.\.[/\\])+/, "");
  let file = path.join(DIST, rel);
  if (!file.startsWith(DIST) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
    if (path.extname(rel)) {
      res.writeHead(404);
      return res.end();
    }
    file = path.join(DIST, "index.html");
  }
  res.writeHead(200, { "content-type": TYPES[path.extname(file)] ?? "application/octet-stream", "content-security-policy": csp(), "cache-control": "no-cache" });
  res.end(fs.readFileSync(file));
});

// ---- the browser ---------------------------------------------------------------------------------------

const TOKENISH = /eyJ[A-Za-z0-9_-]{10,}/; // a base64url JSON header: any JWT

async function storage(page, ctx) {
  const s = await page.evaluate(() => {
    const dump = (st) => Object.fromEntries(Array.from({ length: st.length }, (_, i) => [st.key(i), st.getItem(st.key(i))]));
    return { local: dump(localStorage), session: dump(sessionStorage) };
  });
  s.cookies = await ctx.cookies();
  return s;
}

async function signInPage(page, base) {
  await page.goto(`${base}/clusters`);
  await page.getByRole("heading", { level: 1, name: "Sign in to Strato" }).waitFor({ timeout: 15_000 });
  ok(new URL(page.url()).pathname === "/login", `an unauthenticated visit lands on /login (${new URL(page.url()).pathname}${new URL(page.url()).search})`);
}

async function main() {
  const opPort = await listen(opServer);
  issuer = `http://127.0.0.1:${opPort}`;
  const cPort = await listen(consoleServer);
  consoleOrigin = `http://127.0.0.1:${cPort}`;
  step(`mock OpenID provider ${issuer}, console ${consoleOrigin}, chromium ${exe}`);

  const browser = await chromium.launch({
    executablePath: exe,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
  const consoleErrors = [];
  const newPage = async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await ctx.newPage();
    page.on("console", (m) => m.type() === "error" && consoleErrors.push(m.text()));
    page.on("pageerror", (e) => consoleErrors.push(`pageerror: ${e.message}`));
    return { ctx, page };
  };
  try {
    // 1. The happy path.
    step("sign in with the identity provider");
    {
      const { ctx, page } = await newPage();
      const seen = []; // every top-level URL the tab visited
      page.on("request", (r) => r.isNavigationRequest() && r.frame() === page.mainFrame() && seen.push(r.url()));
      await signInPage(page, consoleOrigin);
      await page.getByRole("button", { name: "Sign in with your identity provider" }).click();
      await page.getByRole("heading", { level: 1, name: "Clusters" }).waitFor({ timeout: 15_000 });
      await page.getByText(/0 clusters, refreshed every 3 s/).waitFor({ timeout: 15_000 });
      if (op.refusals.length) throw new Error(`the provider refused: ${op.refusals.join("; ")}`);
      ok(seen.some((u) => u.startsWith(`${issuer}/authorize?`)), "the tab went to the provider's /authorize");
      ok(op.authorizations.length === 1, "one authorization request, accepted (response_type, client_id, redirect_uri, state, S256 challenge)");
      const back = seen.find((u) => u.startsWith(`${consoleOrigin}${CALLBACK_PATH}?`));
      ok(!!back && new URL(back).searchParams.get("state") === op.authorizations[0].state, "the provider's state came back to the console's callback unchanged");
      ok(op.tokenRequests.length === 1 && op.tokenRequests[0].ok && op.tokenRequests[0].verifierMatched, "the token endpoint got the code and a verifier whose S256 matches the challenge");
      const t = op.tokenRequests[0].params;
      ok(t.redirect_uri === `${consoleOrigin}${CALLBACK_PATH}` && t.client_id === CLIENT_ID && t.code === op.authorizations[0].code, "token request: same redirect_uri, client_id, the issued code");
      const want = `Bearer ${op.issued[0]}`;
      ok(apiAuth.length > 0 && apiAuth.every((h) => h === want), `the API saw only the issued access token (${apiAuth.length} request(s))`);
      const u = new URL(page.url());
      ok(u.pathname === "/clusters" && !u.searchParams.has("code") && !u.searchParams.has("state") && !u.hash, `code and state are gone from the URL (${page.url()})`);
      const hist = await page.evaluate(() => history.length);
      ok(hist >= 1, `history length ${hist}`);
      await page.getByText("Signed in as oidc-alice").waitFor({ timeout: 5_000 });
      ok(true, "the header shows the token's subject");
      const s = await storage(page, ctx);
      const all = JSON.stringify(s);
      ok(!all.includes(op.issued[0]) && !TOKENISH.test(all), `no token in localStorage/sessionStorage/cookies (${all})`);
      ok(Object.keys(s.session).length === 0, "the PKCE verifier and state are gone from sessionStorage");
      ok(!all.includes(op.tokenRequests[0].params.code_verifier), "the verifier is not kept anywhere");
      await page.screenshot({ path: `${ART}oidc-signed-in.png`, fullPage: true });
      // A reload forgets the in-memory token: back to the sign-in page, not a blank page.
      await page.reload();
      await page.getByRole("heading", { level: 1, name: "Sign in to Strato" }).waitFor({ timeout: 10_000 });
      ok(true, "a reload signs out (tokens are in memory only)");
      // A second sign-in in the same tab works (fresh state and verifier; the old code is not replayed).
      const before = op.authorizations.length;
      await page.getByRole("button", { name: "Sign in with your identity provider" }).click();
      await page.getByText(/0 clusters, refreshed every 3 s/).waitFor({ timeout: 15_000 });
      ok(op.authorizations.length === before + 1 && op.authorizations.at(-1).state !== op.authorizations[0].state && op.authorizations.at(-1).challenge !== op.authorizations[0].challenge, "a second sign-in uses a fresh state and challenge");
      if (op.refusals.length) throw new Error(`the provider refused: ${op.refusals.join("; ")}`);
      await ctx.close();
    }

    // 2-4. Failures end on the sign-in page with a readable error.
    const failures = [
      { mode: "tamper-state", name: "tampered state", re: /state/i, tokenCalls: 0 },
      { mode: "token-400", name: "token endpoint 400", re: /expired|invalid_grant/i, tokenCalls: 1 },
      { mode: "idp-error", name: "provider error=access_denied", re: /access_denied|said no/i, tokenCalls: 0 },
    ];
    for (const f of failures) {
      step(`negative: ${f.name}`);
      op.mode = f.mode;
      const tokenBefore = op.tokenRequests.length;
      const apiBefore = apiAuth.length;
      const { ctx, page } = await newPage();
      await signInPage(page, consoleOrigin);
      await page.getByRole("button", { name: "Sign in with your identity provider" }).click();
      const alert = page.getByRole("alert");
      try {
        await alert.waitFor({ timeout: 15_000 });
      } catch {
        await page.screenshot({ path: `${ART}oidc-${f.mode}.png`, fullPage: true });
        throw new Error(`${f.name}: no error shown; page text: ${JSON.stringify((await page.locator("body").innerText()).slice(0, 300))} at ${page.url()}`);
      }
      const text = (await alert.innerText()).trim();
      ok(f.re.test(text), `${f.name}: readable error "${text}"`);
      await page.getByRole("heading", { level: 1, name: "Sign in to Strato" }).waitFor({ timeout: 5_000 });
      ok(new URL(page.url()).pathname === "/login", `${f.name}: still on the sign-in page (${page.url()})`);
      ok(!/[?&](code|state)=/.test(page.url()), `${f.name}: code/state removed from the URL`);
      await page.getByRole("button", { name: "Sign in with your identity provider" }).waitFor({ timeout: 2_000 });
      ok(true, `${f.name}: the sign-in button is there to try again`);
      ok(op.tokenRequests.length - tokenBefore === f.tokenCalls, `${f.name}: ${f.tokenCalls} token request(s)`);
      ok(apiAuth.slice(apiBefore).every((h) => h === null), `${f.name}: no token reached the API`);
      const s = await storage(page, ctx);
      ok(Object.keys(s.session).length === 0 && Object.keys(s.local).length === 0, `${f.name}: storage is empty (${JSON.stringify(s)})`);
      await page.screenshot({ path: `${ART}oidc-${f.mode}.png`, fullPage: true });
      await ctx.close();
    }
    op.mode = "ok";

    // 5. Served with devstack's CSP unchanged (connect-src without the issuer): the browser may not fetch
    //    the discovery document; the sign-in page says so instead of doing nothing.
    step("negative: the page's CSP does not allow the issuer");
    {
      strictCsp = true;
      const authBefore = op.authorizations.length;
      const { ctx, page } = await newPage();
      await signInPage(page, consoleOrigin);
      await page.getByRole("button", { name: "Sign in with your identity provider" }).click();
      const alert = page.getByRole("alert");
      await alert.waitFor({ timeout: 15_000 });
      const text = (await alert.innerText()).trim();
      ok(/could not reach the identity provider/.test(text) && text.includes(issuer), `strict CSP: readable error "${text}"`);
      ok(new URL(page.url()).pathname === "/login" && op.authorizations.length === authBefore, "strict CSP: still on the sign-in page, no authorization request");
      await page.screenshot({ path: `${ART}oidc-strict-csp.png`, fullPage: true });
      await ctx.close();
      strictCsp = false;
    }
    const unexpected = consoleErrors.filter((e) => !/401|400|Failed to load resource|Content Security Policy/.test(e));
    ok(unexpected.length === 0, `no unexpected console errors ${unexpected.length ? JSON.stringify(unexpected) : ""}`);
  } finally {
    await browser.close();
    opServer.close();
    consoleServer.close();
  }
  console.log("e2e:oidc passed");
}

main().catch((e) => fail(e?.stack ?? String(e)));

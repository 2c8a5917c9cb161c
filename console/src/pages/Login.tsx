import { useState } from "preact/hooks";
import { getConfig } from "../config";
import { oidcSignIn, setToken } from "../auth";
import { navigate } from "../router";
import { PageTitle, ProblemBox } from "../ui";

function nextPath(): string {
  const n = new URLSearchParams(location.search).get("next");
  return n && n.startsWith("/") && !n.startsWith("//") && n !== "/login" ? n : "/";
}

export function LoginPage({ reason, error }: { reason?: string; error?: string }) {
  const cfg = getConfig();
  const [tok, setTok] = useState("");
  const [err, setErr] = useState<string | null>(null);
  const submit = (e: Event) => {
    e.preventDefault();
    const t = tok.trim().replace(/^Bearer\s+/i, "");
    if (t.split(".").length !== 3) {
      setErr("That does not look like a JWT (three dot-separated parts).");
      return;
    }
    setToken(t);
    navigate(nextPath(), true);
  };
  return (
    <main id="main" class="login">
      <PageTitle>Sign in to Strato</PageTitle>
      {reason ? <p role="status">{reason}</p> : null}
      <ProblemBox problem={error ?? null} />
      {cfg.auth.kind === "oidc" ? (
        <p>
          <button
            type="button"
            onClick={() => {
              const a = cfg.auth;
              if (a.kind === "oidc") oidcSignIn(a, nextPath()).catch((e) => setErr((e as Error).message));
            }}
          >
            Sign in with your identity provider
          </button>
        </p>
      ) : null}
      <form onSubmit={submit} aria-describedby="token-help">
        <label for="token">API token (JWT)</label>
        <textarea
          id="token"
          rows={4}
          autoComplete="off"
          spellcheck={false}
          value={tok}
          onInput={(e) => setTok((e.target as HTMLTextAreaElement).value)}
        />
        <p id="token-help" class="help">
          Paste a bearer token. With devstack, open the link <code>strato-devstack up</code> prints instead. The token is
          kept in this tab's memory only.
        </p>
        <ProblemBox problem={err} />
        <button type="submit">Sign in</button>
      </form>
    </main>
  );
}

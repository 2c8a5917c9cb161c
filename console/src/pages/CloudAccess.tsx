// Cloud access: what each cloud needs to trust Strato's runs in your account (GET /v1/tenant/target-access,
// each setting copyable), and the API tokens of clouds without federation (PUT/GET/DELETE
// /v1/tenant/cloud-tokens): password inputs, cleared once saved, never rendered back (the API shows none).

import { useState } from "preact/hooks";
import { api, asProblem, idempotencyKey, problemText, type Schemas } from "../api/client";
import { ConfirmDialog } from "../dialog";
import { FieldMessages, describedBy } from "../form/Fields";
import { mapFieldErrors, type FieldError } from "../form/schema";
import { PageTitle, ProblemBox, usePoll, when } from "../ui";
import { accessSections, tokenBody, type Cloud } from "../target/target";
import { Copy } from "./Connect";

type CloudToken = Schemas["CloudToken"];

export function CloudAccessPage() {
  const access = usePoll(async (signal) => {
    const { data, error, response } = await api.GET("/v1/tenant/target-access", { signal });
    if (error || !data) throw asProblem(error, response);
    return data;
  }, 0, []);
  const tokens = usePoll(async (signal) => {
    const { data, error, response } = await api.GET("/v1/tenant/cloud-tokens", { signal });
    if (error || !data) throw asProblem(error, response);
    return data.tokens;
  }, 0, []);
  const sections = access.data ? accessSections(access.data) : [];
  return (
    <section>
      <PageTitle>Cloud access</PageTitle>
      <p class="help">What each cloud needs before Strato can provision into your own account there, and the API tokens of clouds without federation. Name the account as the target when you create a cluster.</p>
      <ProblemBox problem={access.error} label="Could not read the trust settings" />
      {sections.map((s) => (
        <section class="panel" aria-labelledby={`ca-${s.cloud}`} data-testid={`access-${s.cloud}`}>
          <h2 id={`ca-${s.cloud}`}>{s.cloud}</h2>
          <p>{s.summary}</p>
          {s.items.map((i) => (
            <div class="field">
              <span class="label">{i.label}</span> <Copy text={i.value} label={`Copy ${s.cloud} ${i.label}`} />
              <pre class="wrap">{i.value}</pre>
            </div>
          ))}
          {s.cloud === "digitalocean" || s.cloud === "linode" ? (
            <TokenForm cloud={s.cloud} stored={tokens.data?.find((t) => t.provider === s.cloud)} listError={tokens.error} reload={tokens.reload} />
          ) : null}
        </section>
      ))}
    </section>
  );
}

const TOKEN_PATHS = ["token", "storage_access_key_id", "storage_secret_access_key"];

function TokenForm({ cloud, stored, listError, reload }: { cloud: Cloud; stored?: CloudToken; listError: Schemas["Problem"] | string | null; reload(): void }) {
  const [token, setToken] = useState("");
  const [keyId, setKeyId] = useState("");
  const [secret, setSecret] = useState("");
  const [errs, setErrs] = useState<Record<string, FieldError[]>>({});
  const [problem, setProblem] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const [confirm, setConfirm] = useState(false);
  const storage = cloud === "digitalocean" ? "Spaces" : "Object Storage";
  const save = async (e: Event) => {
    e.preventDefault();
    setProblem(null);
    setSaved(null);
    const { error, response } = await api.PUT("/v1/tenant/cloud-tokens/{provider}", {
      params: { path: { provider: cloud } },
      body: tokenBody(token, keyId, secret) as Schemas["CloudTokenRequest"],
    });
    if (error) {
      const p = asProblem(error, response);
      setErrs(mapFieldErrors(p.errors, TOKEN_PATHS).byPath);
      setProblem(problemText(p));
      return;
    }
    // Nothing typed stays on the page once it is stored.
    setErrs({});
    setToken("");
    setKeyId("");
    setSecret("");
    setSaved("Saved. It is sealed and not shown again.");
    reload();
  };
  const input = (id: string, label: string, help: string, value: string, set: (v: string) => void, type: "password" | "text") => {
    const fid = `ct-${cloud}-${id}`;
    const bad = (errs[id]?.length ?? 0) > 0;
    return (
      <div class={`field${bad ? " invalid" : ""}`}>
        <label for={fid}>{label}</label>
        <input id={fid} type={type as "text"} value={value} autoComplete={type === "password" ? "new-password" : "off"} spellcheck={false}
          aria-invalid={bad ? "true" : undefined} aria-describedby={describedBy(fid, true, bad)}
          onInput={(e) => { set((e.target as HTMLInputElement).value); setErrs((x) => ({ ...x, [id]: [] })); }} />
        <FieldMessages id={fid} description={help} problems={[]} apiErrors={errs[id] ?? []} />
      </div>
    );
  };
  return (
    <form onSubmit={save} noValidate aria-label={`${cloud} API token`} data-testid={`token-${cloud}`}>
      <ProblemBox problem={listError} label="Could not list the tokens" />
      <p role="status">
        {stored ? `A token is set (${when(stored.set_at)}, by ${stored.set_by})${stored.storage_keys ? `, with a ${storage} key pair` : ""}.` : listError ? "" : "No token is set."}
      </p>
      {input("token", "API token", `Your ${cloud} API token (write access to what the template creates). Never shown again; set it again to rotate it.`, token, setToken, "password")}
      {input("storage_access_key_id", `${storage} access key id (optional)`, `For a target keeping its state in ${storage}: the API token does not sign its requests. Setting the token replaces the record: give the pair again when rotating.`, keyId, setKeyId, "text")}
      {input("storage_secret_access_key", `${storage} secret key (optional)`, "With the access key id. Never shown again.", secret, setSecret, "password")}
      <ProblemBox problem={problem} />
      {saved ? <p role="status">{saved}</p> : null}
      <div class="actions">
        <button type="submit" disabled={!token.trim()}>{stored ? "Rotate token" : "Set token"}</button>
        {stored ? <button type="button" class="danger" onClick={() => setConfirm(true)}>Remove token</button> : null}
      </div>
      {confirm ? (
        <ConfirmDialog title={`Remove the ${cloud} token?`} confirmLabel="Remove token" danger onClose={() => setConfirm(false)}
          onConfirm={async () => {
            const { error, response } = await api.DELETE("/v1/tenant/cloud-tokens/{provider}", { params: { path: { provider: cloud }, header: { "Idempotency-Key": idempotencyKey() } } as never });
            if (error) setProblem(problemText(asProblem(error, response)));
            reload();
          }}>
          <p>Runs of your {cloud} clusters cannot provision until a token is set again.</p>
        </ConfirmDialog>
      ) : null}
    </form>
  );
}

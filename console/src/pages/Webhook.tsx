// Webhook settings: PUT/GET/DELETE /v1/webhook. The secret is a password input and is never displayed
// (the API answers it masked).

import { useState } from "preact/hooks";
import { api, asProblem, idempotencyKey, problemText } from "../api/client";
import { ConfirmDialog } from "../dialog";
import { FieldMessages, describedBy } from "../form/Fields";
import { mapFieldErrors, type FieldError } from "../form/schema";
import { PageTitle, ProblemBox, usePoll } from "../ui";

export function WebhookPage() {
  const { data, error, reload } = usePoll(async (signal) => {
    const { data, error, response } = await api.GET("/v1/webhook", { signal });
    if (response.status === 404) return null;
    if (error || !data) throw asProblem(error, response);
    return data;
  }, 0, []);
  const [url, setUrl] = useState("");
  const [secret, setSecret] = useState("");
  const [errs, setErrs] = useState<Record<string, FieldError[]>>({});
  const [problem, setProblem] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const [confirm, setConfirm] = useState(false);
  const client = {
    url: url && !/^https:\/\//.test(url) ? ["must start with https://"] : [],
    secret: secret && secret.length < 16 ? ["at least 16 characters"] : [],
  };
  const save = async (e: Event) => {
    e.preventDefault();
    setProblem(null);
    setSaved(null);
    const { error, response } = await api.PUT("/v1/webhook", { body: { url, secret } });
    if (error) {
      const p = asProblem(error, response);
      setErrs(mapFieldErrors(p.errors, ["url", "secret"]).byPath);
      setProblem(problemText(p));
      return;
    }
    setErrs({});
    setSecret("");
    setSaved("Saved. The secret is not shown again.");
    reload();
  };
  const field = (id: "url" | "secret", label: string, help: string, input: preact.JSX.Element) => {
    const fid = `wh-${id}`;
    const bad = client[id].length + (errs[id]?.length ?? 0) > 0;
    return (
      <div class={`field${bad ? " invalid" : ""}`}>
        <label for={fid}>{label}</label>
        {{ ...input, props: { ...input.props, id: fid, "aria-invalid": bad ? "true" : undefined, "aria-describedby": describedBy(fid, true, bad) } }}
        <FieldMessages id={fid} description={help} problems={client[id]} apiErrors={errs[id] ?? []} />
      </div>
    );
  };
  return (
    <section>
      <PageTitle>Webhook</PageTitle>
      <ProblemBox problem={error} label="Could not read the webhook" />
      <p>
        {data === null ? "No webhook is set." : data ? <>Events are sent to <code>{data.url}</code>, signed with your secret.</> : "Loading…"}
      </p>
      <form onSubmit={save} noValidate aria-label="Webhook settings">
        {field("url", "Receiver URL", "An https:// URL whose host is a public name or address.",
          <input type="url" required value={url} autoComplete="url" onInput={(e) => setUrl((e.target as HTMLInputElement).value)} />)}
        {field("secret", "Signing secret", "At least 16 characters. Never shown again; set it again to rotate it.",
          <input type="password" required value={secret} autoComplete="new-password" onInput={(e) => setSecret((e.target as HTMLInputElement).value)} />)}
        <ProblemBox problem={problem} />
        {saved ? <p role="status">{saved}</p> : null}
        <div class="actions">
          <button type="submit" disabled={!url || !secret || client.url.length + client.secret.length > 0}>
            {data ? "Replace webhook" : "Set webhook"}
          </button>
          {data ? <button type="button" class="danger" onClick={() => setConfirm(true)}>Remove webhook</button> : null}
        </div>
      </form>
      {confirm ? (
        <ConfirmDialog title="Remove the webhook?" confirmLabel="Remove webhook" danger onClose={() => setConfirm(false)}
          onConfirm={async () => {
            const { error, response } = await api.DELETE("/v1/webhook", { params: { header: { "Idempotency-Key": idempotencyKey() } } as never });
            if (error) setProblem(problemText(asProblem(error, response)));
            reload();
          }}>
          <p>No more events will be sent to {data?.url}.</p>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}

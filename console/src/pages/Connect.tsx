// The Connect panel of a cluster's overview: the CLI command that merges its kubeconfig, the kubeconfig
// as a download, or why it is not available yet (the API's 409 detail).

import { useEffect, useState } from "preact/hooks";
import { currentToken, signOut } from "../auth";
import { cliCommand, interpretKubeconfig, kubeconfigFileName, type ConnectResult } from "./connect";

async function fetchKubeconfig(id: string, signal: AbortSignal): Promise<ConnectResult> {
  const t = currentToken();
  const r = await fetch(`/v1/clusters/${encodeURIComponent(id)}/kubeconfig`, {
    headers: { Accept: "application/json", ...(t ? { Authorization: `Bearer ${t}` } : {}) },
    signal,
  });
  if (r.status === 401) signOut("Your session is no longer valid; sign in again.");
  const body = await r.json().catch(() => null);
  return interpretKubeconfig(r.status, body);
}

function download(name: string, text: string) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([text], { type: "application/yaml;charset=utf-8" }));
  a.download = kubeconfigFileName(name);
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

export function Copy({ text, label }: { text: string; label: string }) {
  const [done, setDone] = useState(false);
  return (
    <button type="button" class="secondary small" aria-label={label} onClick={async () => {
      try {
        await navigator.clipboard.writeText(text);
        setDone(true);
        setTimeout(() => setDone(false), 1500);
      } catch { /* no clipboard permission: the text is selectable */ }
    }}>
      {done ? "Copied" : "Copy"}
    </button>
  );
}

/** `ready`: the cluster's state and version, so the panel asks again once the cluster changes. */
export function ConnectPanel({ id, name, ready }: { id: string; name: string; ready: string }) {
  const [res, setRes] = useState<ConnectResult | null>(null);
  useEffect(() => {
    const ctl = new AbortController();
    fetchKubeconfig(id, ctl.signal).then(setRes, (e) => { if (!ctl.signal.aborted) setRes({ kind: "error", detail: (e as Error).message }); });
    return () => ctl.abort();
  }, [id, ready]);
  const cmd = cliCommand(name);
  return (
    <section class="panel" aria-labelledby="connect-h" data-testid="connect">
      <h2 id="connect-h">Connect</h2>
      <p>Merge the cluster's context into your kubeconfig with the Strato CLI:</p>
      <div class="command">
        <code data-testid="connect-command">{cmd}</code> <Copy text={cmd} label="Copy the command" />
      </div>
      {!res ? <p class="help">Checking whether the cluster can be reached…</p> : null}
      {res?.kind === "ok" ? (
        <>
          <p>
            Or download the kubeconfig: context <code>{res.config.context}</code>, endpoint <code class="wrap">{res.config.endpoint}</code>
            {res.config.region ? <>, region <code>{res.config.region}</code></> : null}.
          </p>
          <p class="help">
            Credentials are short-lived tokens kubectl asks for on each use
            {res.config.kind === "eks" ? ` (aws eks get-token${res.config.role_arn ? `, as ${res.config.role_arn}` : ""})` : ""}; the file holds no secret.
          </p>
          {res.config.token_command ? (
            <p class="help">
              A token by hand: <code class="wrap" data-testid="connect-token-command">{res.config.token_command}</code>
            </p>
          ) : null}
          {res.config.note ? <p class="help" data-testid="connect-note">{res.config.note}</p> : null}
          <div class="actions">
            <button type="button" onClick={() => download(name, res.config.kubeconfig)}>Download kubeconfig</button>
          </div>
        </>
      ) : null}
      {res && res.kind !== "ok" ? (
        <>
          <div class="actions">
            <button type="button" disabled aria-describedby="connect-why">Download kubeconfig</button>
          </div>
          <p class="help" id="connect-why" data-testid="connect-unavailable">Not available: {res.detail}</p>
        </>
      ) : null}
    </section>
  );
}

// The platform operator's template catalog (GET /v1/admin/templates): every version with its standing, and
// deprecating (new clusters cannot use it; clusters on it keep working) or yanking it (a reason required;
// no cluster may move to it; final) behind a confirmation. Publishing a version is `strato admin templates
// publish DIR` (the bundle is packed from the template's folder).

import { useState } from "preact/hooks";
import { api, asProblem, problemText, type Schemas } from "../api/client";
import { ConfirmDialog } from "../dialog";
import { PageTitle, ProblemBox, usePoll, when, ListHead } from "../ui";

type Version = Schemas["AdminTemplateVersion"];
type Pending = { name: string; version: string; action: "deprecate" | "yank" };

const BADGE: Record<string, string> = { active: "active", deprecated: "pending", yanked: "failed" };

export function AdminTemplatesPage() {
  const { data, error, reload } = usePoll(async (signal) => {
    const { data, error, response } = await api.GET("/v1/admin/templates", { signal });
    if (error || !data) throw asProblem(error, response);
    return data;
  }, 30000, []);
  const [pending, setPending] = useState<Pending | null>(null);
  const [reason, setReason] = useState("");
  const [problem, setProblem] = useState<string | null>(null);
  const send = async (p: Pending) => {
    setProblem(null);
    const path =
      p.action === "yank"
        ? "/v1/admin/templates/{name}/versions/{version}/yank"
        : "/v1/admin/templates/{name}/versions/{version}/deprecate";
    const body = reason.trim() ? { reason: reason.trim() } : {};
    const { error, response } = await api.POST(path as "/v1/admin/templates/{name}/versions/{version}/yank", {
      params: { path: { name: p.name, version: p.version } },
      body: body as never,
    });
    if (error) setProblem(problemText(asProblem(error, response)));
    setReason("");
    reload();
  };
  const actions = (name: string, v: Version) => (
    <>
      {v.standing === "active" ? (
        <button type="button" class="secondary" aria-label={`Deprecate ${name} ${v.version}`} onClick={() => setPending({ name, version: v.version, action: "deprecate" })}>Deprecate…</button>
      ) : null}
      {v.standing !== "yanked" ? (
        <button type="button" class="danger" aria-label={`Yank ${name} ${v.version}`} onClick={() => setPending({ name, version: v.version, action: "yank" })}>Yank…</button>
      ) : null}
    </>
  );
  return (
    <section>
      <PageTitle>Templates</PageTitle>
      <p class="help">
        A version's content never changes; its standing does. Deprecated: new clusters cannot use it, clusters on it keep
        working and may still move to it. Yanked: no cluster may start on it or move to it; clusters on it keep running. Publish
        a version with <code>strato admin templates publish DIR</code>.
      </p>
      <ProblemBox problem={error} label="Could not read the catalog" />
      <ProblemBox problem={problem} />
      {data?.templates.map((t) => (
        <div class="panel" key={t.name}>
          <h2>{t.name}</h2>
          <p class="help">{t.description}</p>
          <table class="list" data-testid={`template-${t.name}`}>
            <ListHead caption={`Versions of ${t.name}, oldest first`} columns={["Version", "Standing", "Why, who, when", "Bundle", <span class="sr-only">Actions</span>]} />
            <tbody>
              {t.versions.map((v) => (
                <tr key={v.version}>
                  <td>{v.version}</td>
                  <td><span class={`badge badge-${BADGE[v.standing] ?? "pending"}`}>{v.standing}</span></td>
                  <td>{v.reason ?? ""}{v.by ? <div class="help">{v.by}, {when(v.at)}</div> : null}</td>
                  <td><code class="small" title={v.sha256}>{v.sha256.slice(0, 12)}…</code></td>
                  <td class="nowrap">{actions(t.name, v)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
      {pending ? (
        <ConfirmDialog
          title={`${pending.action === "yank" ? "Yank" : "Deprecate"} ${pending.name} ${pending.version}?`}
          confirmLabel={pending.action === "yank" ? "Yank version" : "Deprecate version"}
          danger={pending.action === "yank"}
          onClose={() => setPending(null)}
          onConfirm={() => send(pending)}
        >
          <p>
            {pending.action === "yank"
              ? "No cluster may start on this version or move to it, for good. Clusters on it keep running."
              : "New clusters cannot use this version. Clusters on it keep working and may still move to it."}
          </p>
          <div class="field">
            <label for="standing-reason">Reason{pending.action === "yank" ? "" : " (optional)"}</label>
            <input type="text" id="standing-reason" value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
          </div>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}

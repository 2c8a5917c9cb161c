// A cluster's lifetime: when the scheduler deletes it on its own, changed by PATCH (extend, shorten, or never
// when the tenant has no maximum — the API says so otherwise, shown as its problem).
import { useState } from "preact/hooks";
import { api, asProblem, idempotencyKey, problemText, type Cluster } from "../api/client";
import { untilText, validateHours } from "../form/lifetime";
import { ProblemBox, when } from "../ui";

export function ExpirySettings({ cluster: c, onSaved }: { cluster: Cluster; onSaved(): void }) {
  const [hours, setHours] = useState("");
  const [touched, setTouched] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const bad = touched ? validateHours(hours) : [];
  const expires = c.expires_at ?? null;
  const patch = async (body: { ttl_hours: number } | { expires_at: null }, done: string) => {
    setProblem(null);
    setSaved(null);
    const { data, error, response } = await api.PATCH("/v1/clusters/{id}", {
      params: { path: { id: c.id }, header: { "If-Match": `"${c.version}"`, "Idempotency-Key": idempotencyKey() } },
      body,
    });
    if (error || !data) setProblem(problemText(asProblem(error, response)));
    else {
      setSaved(done);
      setHours("");
      setTouched(false);
      onSaved();
    }
  };
  const submit = (e: Event) => {
    e.preventDefault();
    setTouched(true);
    if (validateHours(hours).length) return;
    void patch({ ttl_hours: Number(hours.trim()) }, "Expiry saved.");
  };
  return (
    <>
      <p>
        {expires ? (
          <>
            Deleted automatically at <strong>{when(expires)}</strong> ({untilText(expires)}).
          </>
        ) : (
          "Never deleted automatically."
        )}
      </p>
      <form onSubmit={submit} noValidate aria-label="Expiry" class="row-fields">
        <div class={`field${bad.length ? " invalid" : ""}`}>
          <label for="x-hours">Delete after (hours from now)</label>
          <input id="x-hours" type="number" min={1} step={1} value={hours} inputMode="numeric"
            onInput={(e) => { setHours((e.target as HTMLInputElement).value); setTouched(true); }}
            aria-invalid={bad.length ? "true" : undefined} aria-describedby={bad.length ? "x-hours-err" : undefined} />
          {bad.length ? <ul class="field-errors" id="x-hours-err"><li>{bad[0]}</li></ul> : null}
        </div>
        <div class="field">
          <button type="submit">Set expiry</button>{" "}
          {expires ? (
            <button type="button" class="secondary" onClick={() => void patch({ expires_at: null }, "The cluster no longer expires.")}>
              Never expire
            </button>
          ) : null}
          {saved ? <p role="status">{saved}</p> : null}
          <ProblemBox problem={problem} />
        </div>
      </form>
    </>
  );
}

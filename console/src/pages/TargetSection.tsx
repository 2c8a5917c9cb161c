// The create page's target section: the fields of the chosen cloud's target (your own account), each with
// its help and the API's 422 for `target.<field>` beside it. Trust settings live on the Cloud access page.

import { FieldMessages, describedBy } from "../form/Fields";
import type { FieldError } from "../form/schema";
import { Link } from "../ui";
import { TOKEN_CLOUDS, targetFields } from "../target/target";

export function TargetSection(props: {
  provider: string;
  values: Record<string, string>;
  onChange(name: string, value: string): void;
  apiErrs: Record<string, FieldError[]>;
  externalId?: string;
}) {
  const fields = targetFields(props.provider);
  if (!fields.length) return null;
  const whole = [...(props.apiErrs["target"] ?? []), ...(props.apiErrs["target.provider"] ?? [])];
  const intro =
    props.provider === "aws"
      ? `Leave the role empty to use Strato's own account.${props.externalId ? ` Your role is assumed with your external id ${props.externalId}.` : ""}`
      : (TOKEN_CLOUDS as string[]).includes(props.provider)
        ? `Runs use the ${props.provider} API token you registered on the Cloud access page.`
        : `Runs federate with Strato's identity tokens: set up the trust on the Cloud access page first.`;
  // An optional target (AWS: Strato's own account without one; DigitalOcean, Linode: only state settings) starts
  // folded, and opens by itself once something is typed in it or the API names one of its fields.
  const optional = props.provider === "aws" || (TOKEN_CLOUDS as string[]).includes(props.provider);
  const open = !optional || fields.some((f) => (props.values[f.name] ?? "") !== "" || (props.apiErrs[`target.${f.name}`]?.length ?? 0) > 0) || whole.length > 0;
  const section = (
    <fieldset class="section" data-testid="target-section">
      <legend>Target: your {props.provider} account</legend>
      <p class="help" id="c-target-help">
        {intro} <Link href="/cloud-access">Cloud access</Link>
      </p>
      {whole.length ? <FieldMessages id="c-target" problems={[]} apiErrors={whole} /> : null}
      {fields.map((f) => {
        const path = `target.${f.name}`;
        const fid = `c-${path}`;
        const errs = props.apiErrs[path] ?? [];
        return (
          <div class={`field${errs.length ? " invalid" : ""}`} key={path}>
            <label for={fid}>{f.label}</label>
            <input
              id={fid}
              type="text"
              autoComplete="off"
              spellcheck={false}
              placeholder={f.placeholder}
              value={props.values[f.name] ?? ""}
              onInput={(e) => props.onChange(f.name, (e.target as HTMLInputElement).value)}
              aria-invalid={errs.length ? "true" : undefined}
              aria-describedby={describedBy(fid, true, errs.length > 0)}
            />
            <FieldMessages id={fid} description={f.help} problems={[]} apiErrors={errs} />
          </div>
        );
      })}
    </fieldset>
  );
  return optional ? (
    <details open={open} class="target">
      <summary>{props.provider === "aws" ? "Deploy into your own AWS account (optional)" : `State in your own ${props.provider} object storage (optional)`}</summary>
      {section}
    </details>
  ) : (
    section
  );
}

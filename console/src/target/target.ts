// The create page's target section and the "Cloud access" page, their pure parts: which fields each cloud's
// target takes, the request's `target` built from what was typed (empty optional fields left out), and each
// cloud's trust settings from GET /v1/tenant/target-access.

export type Cloud = "aws" | "gcp" | "azure" | "digitalocean" | "linode";

export const CLOUDS: Cloud[] = ["aws", "gcp", "azure", "digitalocean", "linode"];
/** Clouds whose runs use the tenant's registered API token (no federation). */
export const TOKEN_CLOUDS: Cloud[] = ["digitalocean", "linode"];

export interface TargetField {
  /** The request member (`target.<name>` in a 422). */
  name: string;
  label: string;
  help: string;
  required: boolean;
  placeholder?: string;
}

const STATE_BUCKET = (what: string): TargetField => ({ name: "state_bucket", label: "State bucket (optional)", help: `Your own ${what} bucket for the cluster's Terraform state; empty: Strato's.`, required: false });

export const TARGET_FIELDS: Record<Cloud, TargetField[]> = {
  aws: [
    { name: "role_arn", label: "Role ARN", help: "The role Strato assumes in your account (its trust policy is on the Cloud access page). Empty: Strato's own account.", required: true, placeholder: "arn:aws:iam::123456789012:role/strato-target" },
    { name: "auth", label: "Authentication (optional)", help: "assume_role (default: with your external id) or web_identity (with each run's Strato identity token).", required: false, placeholder: "assume_role" },
    STATE_BUCKET("S3"),
    { name: "lock_table", label: "Lock table (optional)", help: "The DynamoDB table that locks your state (default: <state bucket>-locks).", required: false },
    { name: "region", label: "Target region (optional)", help: "The region of the role session and state bucket (default: the cluster's).", required: false },
  ],
  gcp: [
    { name: "project_id", label: "Project id", help: "The GCP project to provision into.", required: true, placeholder: "acme-prod" },
    { name: "workload_identity_provider", label: "Workload identity provider", help: "The pool provider that trusts Strato's tokens (settings on the Cloud access page).", required: true, placeholder: "projects/123456789/locations/global/workloadIdentityPools/strato/providers/strato" },
    { name: "service_account", label: "Service account", help: "The service account the federated identity impersonates.", required: true, placeholder: "terraform@acme-prod.iam.gserviceaccount.com" },
    STATE_BUCKET("GCS"),
  ],
  azure: [
    { name: "tenant_id", label: "Entra tenant id", help: "The directory of the app registration or managed identity (a GUID).", required: true },
    { name: "client_id", label: "Client id", help: "The app registration or managed identity with Strato's federated credential (a GUID).", required: true },
    { name: "subscription_id", label: "Subscription id", help: "The subscription to provision into (a GUID).", required: true },
    { name: "state_storage_account", label: "State storage account (optional)", help: "Your own storage account for the state (with a container); empty: Strato's.", required: false },
    { name: "state_container", label: "State container (optional)", help: "The blob container in that storage account.", required: false },
    { name: "state_resource_group", label: "State resource group (optional)", help: "The storage account's resource group.", required: false },
  ],
  digitalocean: [STATE_BUCKET("Spaces"), { name: "state_region", label: "State region (optional)", help: "The Spaces region of that bucket, e.g. nyc3.", required: false }],
  linode: [STATE_BUCKET("Object Storage"), { name: "state_region", label: "State region (optional)", help: "The Object Storage region of that bucket, e.g. us-east-1.", required: false }],
};

export function isCloud(p: string): p is Cloud {
  return (CLOUDS as string[]).includes(p);
}

/** The fields of `provider`'s target (none for a provider the console does not know). */
export function targetFields(provider: string): TargetField[] {
  return isCloud(provider) ? TARGET_FIELDS[provider] : [];
}

/** The 422 paths of `provider`'s target, for mapping the API's field errors onto the inputs. */
export function targetPaths(provider: string): string[] {
  return ["target", "target.provider", ...targetFields(provider).map((f) => `target.${f.name}`)];
}

/**
 * The request's `target` for a cluster on `provider` from the typed values, or undefined for none:
 * empty (or blank) fields are left out; AWS without a role is Strato's own account; GCP and Azure with
 * nothing typed send none (the API then says a target is needed and what it takes); DigitalOcean and Linode
 * always send `{provider}` (their runs use the tenant's registered token). An AWS target carries no
 * `provider`, as every AWS target always has.
 */
export function buildTarget(provider: string, values: Record<string, string>): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const f of targetFields(provider)) {
    const v = (values[f.name] ?? "").trim();
    if (v) out[f.name] = v;
  }
  // Some AWS fields without a role: sent, for the API to say the role is required.
  if (provider === "aws") return Object.keys(out).length ? out : undefined;
  if (!Object.keys(out).length && !(TOKEN_CLOUDS as string[]).includes(provider)) return undefined;
  return { provider, ...out };
}

export interface FederationLike {
  issuer: string;
  subject_pattern: string;
  aws: Record<string, unknown>;
  gcp: Record<string, unknown>;
  azure: Record<string, unknown>;
}

export interface TargetAccessLike {
  external_id: string;
  principal?: string | null;
  trust_policy: Record<string, unknown>;
  federation?: FederationLike | null;
}

export interface AccessSection {
  cloud: Cloud;
  /** What to do, in a sentence. */
  summary: string;
  /** Settings to paste, each copyable (JSON or text). */
  items: { label: string; value: string }[];
}

const json = (v: unknown) => JSON.stringify(v, null, 2);

/** Each cloud's trust settings from GET /v1/tenant/target-access (token clouds: what to register). */
export function accessSections(a: TargetAccessLike): AccessSection[] {
  const fed = a.federation ?? null;
  const none = "This deployment issues no identity tokens, so runs cannot federate with this cloud: ask its operator.";
  const federated = (cloud: "gcp" | "azure", summary: string): AccessSection =>
    fed
      ? { cloud, summary, items: [{ label: "Issuer", value: fed.issuer }, { label: "Subject of your runs' tokens", value: fed.subject_pattern }, { label: "Settings", value: json(fed[cloud]) }] }
      : { cloud, summary: none, items: [] };
  const aws: AccessSection = {
    cloud: "aws",
    summary: "Put this trust policy on the role you name as the target: only Strato's principal, only with your external id.",
    items: [
      { label: "External id", value: a.external_id },
      ...(a.principal ? [{ label: "Strato's principal", value: a.principal }] : []),
      { label: "Trust policy", value: json(a.trust_policy) },
      ...(fed ? [{ label: "Or with web_identity: OIDC provider and trust policy", value: json(fed.aws) }] : []),
    ],
  };
  const token = (cloud: Cloud, name: string, storage: string): AccessSection => ({
    cloud,
    summary: `${name} has no federation: register your API token below (and your ${storage} key pair if the state lives there); it is sealed and never shown again.`,
    items: [],
  });
  return [
    aws,
    federated("gcp", "Create a workload identity pool provider (OIDC) with these settings, and let it impersonate the target's service account."),
    federated("azure", "Add a federated identity credential with these settings to the app registration or managed identity."),
    token("digitalocean", "DigitalOcean", "Spaces"),
    token("linode", "Linode", "Object Storage"),
  ];
}

/** The cloud-token request body: each storage half only when typed (half a pair comes back as a 422 on the other). */
export function tokenBody(token: string, keyId: string, secret: string): Record<string, string> {
  const body: Record<string, string> = { token: token.trim() };
  if (keyId.trim()) body.storage_access_key_id = keyId.trim();
  if (secret.trim()) body.storage_secret_access_key = secret.trim();
  return body;
}

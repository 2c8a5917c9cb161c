// How to reach a cluster's Kubernetes API: `GET /v1/clusters/{id}/kubeconfig` (the `Kubeconfig` schema of
// the OpenAPI document), read with fetch so an API older than the endpoint is told apart. A 409 (no endpoint yet, or a template that says nothing about connecting) is "not
// available", with the API's own detail; a 404 from an API without the endpoint says so too.

export interface Kubeconfig {
  context: string;
  kind: "eks" | string;
  /** The cloud's name for the cluster, which tokens are signed for. */
  cluster_name?: string;
  region?: string;
  endpoint: string;
  role_arn?: string | null;
  aws_profile?: string | null;
  /** The kubeconfig itself (YAML): exec-based, short-lived credentials, no secret in it. */
  kubeconfig: string;
  /** The command kubectl's exec plugin runs for a token, to try by hand. */
  token_command?: string;
  /** Who the cluster lets in, as the API words it. */
  note?: string | null;
}

export type ConnectResult =
  | { kind: "ok"; config: Kubeconfig }
  | { kind: "unavailable"; detail: string }
  | { kind: "error"; detail: string };

/** What one answer of the kubeconfig endpoint means for the Connect panel. */
export function interpretKubeconfig(status: number, body: unknown): ConnectResult {
  const b = (body && typeof body === "object" ? body : {}) as Record<string, unknown>;
  const detail = typeof b.detail === "string" ? b.detail : typeof b.title === "string" ? b.title : "";
  if (status === 200 && typeof b.kubeconfig === "string" && typeof b.endpoint === "string") {
    return { kind: "ok", config: b as unknown as Kubeconfig };
  }
  if (status === 200) return { kind: "error", detail: "The API answered without a kubeconfig." };
  if (status === 409) return { kind: "unavailable", detail: detail || "The cluster cannot be connected to yet." };
  // An API without the route answers its unknown-path 404 ("no resource at …"): older than the endpoint.
  if (status === 404 && (!detail || /^no resource at /.test(detail))) return { kind: "unavailable", detail: "This Strato API does not offer kubeconfigs yet." };
  return { kind: "error", detail: `${detail || "The request failed"} (HTTP ${status})` };
}

/** The CLI command the panel shows: the cluster by name, merged into ~/.kube/config. */
export function cliCommand(name: string): string {
  return `strato clusters kubeconfig ${name} --merge`;
}

/** The file name of the downloaded kubeconfig. */
export function kubeconfigFileName(name: string): string {
  return `${name.replace(/[^a-zA-Z0-9._-]/g, "-")}.kubeconfig.yaml`;
}

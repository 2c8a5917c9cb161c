import { describe, expect, it } from "vitest";
import { accessSections, buildTarget, targetFields, targetPaths, tokenBody } from "./target";

describe("buildTarget", () => {
  it("builds each cloud's target from its fields, leaving empty optional ones out", () => {
    expect(buildTarget("gcp", { project_id: " acme-prod ", workload_identity_provider: "projects/1/locations/global/workloadIdentityPools/p/providers/s", service_account: "tf@acme-prod.iam.gserviceaccount.com", state_bucket: "  " })).toEqual({
      provider: "gcp",
      project_id: "acme-prod",
      workload_identity_provider: "projects/1/locations/global/workloadIdentityPools/p/providers/s",
      service_account: "tf@acme-prod.iam.gserviceaccount.com",
    });
    expect(buildTarget("azure", { tenant_id: "t", client_id: "c", subscription_id: "s", state_container: "" })).toEqual({ provider: "azure", tenant_id: "t", client_id: "c", subscription_id: "s" });
  });
  it("ignores another cloud's values left over from a provider switch", () => {
    expect(buildTarget("azure", { project_id: "acme-prod", tenant_id: "t" })).toEqual({ provider: "azure", tenant_id: "t" });
  });
  it("sends none for an untouched AWS, GCP or Azure target, and {provider} at least for token clouds", () => {
    expect(buildTarget("aws", {})).toBeUndefined();
    expect(buildTarget("gcp", { project_id: "" })).toBeUndefined();
    expect(buildTarget("azure", {})).toBeUndefined();
    expect(buildTarget("digitalocean", {})).toEqual({ provider: "digitalocean" });
    expect(buildTarget("linode", { state_bucket: "b", state_region: "us-east-1" })).toEqual({ provider: "linode", state_bucket: "b", state_region: "us-east-1" });
  });
  it("keeps an AWS target's shape (no provider) and sends a partial one for the API to judge", () => {
    expect(buildTarget("aws", { role_arn: "arn:aws:iam::123456789012:role/x", region: "eu-west-1" })).toEqual({ role_arn: "arn:aws:iam::123456789012:role/x", region: "eu-west-1" });
    expect(buildTarget("aws", { state_bucket: "b" })).toEqual({ state_bucket: "b" });
  });
  it("knows each cloud's fields and their 422 paths", () => {
    expect(targetFields("gcp").filter((f) => f.required).map((f) => f.name)).toEqual(["project_id", "workload_identity_provider", "service_account"]);
    expect(targetFields("azure").filter((f) => f.required).map((f) => f.name)).toEqual(["tenant_id", "client_id", "subscription_id"]);
    expect(targetFields("nimbus")).toEqual([]);
    expect(targetPaths("digitalocean")).toEqual(["target", "target.provider", "target.state_bucket", "target.state_region"]);
  });
});

describe("accessSections", () => {
  const access = {
    external_id: "strato-abc",
    principal: "arn:aws:iam::1:role/runner",
    trust_policy: { Version: "2012-10-17" },
    federation: { issuer: "https://id.example.com", subject_pattern: "tenant:acme:…", aws: { oidc_provider: {} }, gcp: { attribute_condition: "assertion.strato_tenant == 'acme'" }, azure: { audiences: ["api://AzureADTokenExchange"] } },
  };
  it("gives every cloud a section with what to paste", () => {
    const s = accessSections(access);
    expect(s.map((x) => x.cloud)).toEqual(["aws", "gcp", "azure", "digitalocean", "linode"]);
    expect(s[0].items.map((i) => i.label)).toContain("External id");
    expect(s[0].items.find((i) => i.label === "External id")?.value).toBe("strato-abc");
    expect(s[1].items.find((i) => i.label === "Settings")?.value).toContain("assertion.strato_tenant == 'acme'");
    expect(s[2].items.find((i) => i.label === "Issuer")?.value).toBe("https://id.example.com");
    expect(s[3].summary).toContain("API token");
  });
  it("says so when the deployment issues no identity tokens", () => {
    const s = accessSections({ ...access, federation: null });
    expect(s[1].items).toEqual([]);
    expect(s[1].summary).toContain("no identity tokens");
    expect(s[0].items.some((i) => i.label.includes("web_identity"))).toBe(false);
  });
});

describe("tokenBody", () => {
  it("sends each storage half only when typed", () => {
    expect(tokenBody(" tok ", "", "")).toEqual({ token: "tok" });
    expect(tokenBody("tok", "KEYID", "SECRET")).toEqual({ token: "tok", storage_access_key_id: "KEYID", storage_secret_access_key: "SECRET" });
    expect(tokenBody("tok", "KEYID", " ")).toEqual({ token: "tok", storage_access_key_id: "KEYID" });
  });
});

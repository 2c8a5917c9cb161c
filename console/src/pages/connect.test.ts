import { describe, expect, it } from "vitest";
import { cliCommand, interpretKubeconfig, kubeconfigFileName } from "./connect";

const OK = {
  context: "strato-demo", kind: "eks", cluster_name: "demo-1a2b3c4d", region: "us-east-1", endpoint: "https://ABC.gr7.us-east-1.eks.amazonaws.com",
  kubeconfig: "apiVersion: v1\nkind: Config\n", token_command: "aws --region us-east-1 eks get-token --cluster-name demo-1a2b3c4d --output json",
};

describe("Connect panel", () => {
  it("a 200 with a kubeconfig is offered for download", () => {
    expect(interpretKubeconfig(200, OK)).toEqual({ kind: "ok", config: OK });
    expect(interpretKubeconfig(200, { context: "x" }).kind).toBe("error");
  });
  it("a 409 is not available, in the API's words", () => {
    expect(interpretKubeconfig(409, { type: "urn:strato:problem:conflict", title: "Conflict", status: 409, detail: "the cluster has no endpoint yet" }))
      .toEqual({ kind: "unavailable", detail: "the cluster has no endpoint yet" });
  });
  it("an API without the endpoint, and other failures", () => {
    expect(interpretKubeconfig(404, null)).toEqual({ kind: "unavailable", detail: "This Strato API does not offer kubeconfigs yet." });
    expect(interpretKubeconfig(404, { title: "Not Found", detail: "no resource at /v1/clusters/cl-1/kubeconfig" }).kind).toBe("unavailable");
    expect(interpretKubeconfig(404, { title: "Not Found", detail: "no cluster cl-1" })).toEqual({ kind: "error", detail: "no cluster cl-1 (HTTP 404)" });
    expect(interpretKubeconfig(500, {})).toEqual({ kind: "error", detail: "The request failed (HTTP 500)" });
  });
  it("names the cluster in the command and the file", () => {
    expect(cliCommand("demo2")).toBe("strato clusters kubeconfig demo2 --merge");
    expect(kubeconfigFileName("demo2")).toBe("demo2.kubeconfig.yaml");
  });
});

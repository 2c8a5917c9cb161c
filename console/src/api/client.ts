// The typed API client: openapi-fetch over the types openapi-typescript generates from
// functions/api/openapi.yaml (`npm run gen`, part of `npm run build`).

import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./schema";
import { currentToken, signOut } from "../auth";
import { isEnded } from "../approval";

export type Schemas = components["schemas"];
export type Cluster = Schemas["Cluster"];
export type Operation = Schemas["Operation"];
export type Problem = Schemas["Problem"];
export type FieldError = Schemas["FieldError"];
export type TemplateDetail = Schemas["TemplateDetail"];
export type ClusterState = Schemas["ClusterState"];

const auth: Middleware = {
  onRequest({ request }) {
    const t = currentToken();
    if (t) request.headers.set("Authorization", `Bearer ${t}`);
    return request;
  },
  onResponse({ response }) {
    if (response.status === 401) signOut("Your session is no longer valid; sign in again.");
    return response;
  },
};

export const api = createClient<paths>({ baseUrl: location.origin });
api.use(auth);

/** A fresh Idempotency-Key for one user action (retries of the same action reuse it). */
export function idempotencyKey(): string {
  return crypto.randomUUID();
}

/** An error answer as a Problem, whatever the body was. */
export function asProblem(error: unknown, response: Response): Problem {
  if (error && typeof error === "object" && "title" in error) return error as Problem;
  const msg = error && typeof error === "object" && "message" in error ? String((error as { message: unknown }).message) : "";
  return {
    type: "urn:strato:problem:unknown",
    title: response.statusText || "Request failed",
    status: response.status,
    detail: msg || `HTTP ${response.status}`,
  };
}

export function problemText(p: Problem): string {
  return `${p.title}: ${p.detail}${p.request_id ? ` (request ${p.request_id})` : ""}`;
}

/** Polls an operation until it ends (estimates); `signal` stops it. */
export async function waitOperation(id: string, signal: AbortSignal, everyMs = 1000): Promise<Operation> {
  for (;;) {
    const { data, error, response } = await api.GET("/v1/operations/{id}", { params: { path: { id } }, signal });
    if (error || !data) throw new Error(problemText(asProblem(error, response)));
    if (isEnded(data.status)) return data;
    await new Promise((r) => setTimeout(r, everyMs));
    if (signal.aborted) throw new Error("stopped");
  }
}

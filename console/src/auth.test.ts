import { describe, expect, it } from "vitest";
import { authorizeErrorText, checkDiscovery, pkceChallenge, SignInError, tokenClaims, tokenErrorText } from "./auth";

describe("auth", () => {
  it("computes the S256 PKCE challenge (RFC 7636 appendix B)", async () => {
    expect(await pkceChallenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")).toBe("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
  });
  it("reads display claims from a JWT without trusting it", () => {
    const p = btoa(JSON.stringify({ sub: "dev-demo", tenant_id: "demo" })).replace(/=+$/, "");
    expect(tokenClaims(`x.${p}.y`).sub).toBe("dev-demo");
    expect(tokenClaims("garbage")).toEqual({});
  });
  it("reads the token endpoint's OAuth error (RFC 6749 5.2)", () => {
    expect(tokenErrorText(400, { error: "invalid_grant", error_description: "code expired" })).toBe(
      "the identity provider did not issue a token (HTTP 400, invalid_grant: code expired); try again",
    );
    expect(tokenErrorText(502, null)).toBe("the identity provider did not issue a token (HTTP 502); try again");
    expect(tokenErrorText(400, { error: 7 })).toBe("the identity provider did not issue a token (HTTP 400); try again");
  });
  it("reads an error redirect from the authorization endpoint", () => {
    expect(authorizeErrorText(new URLSearchParams("error=access_denied&error_description=no&state=s"))).toBe(
      "the identity provider refused the sign-in (access_denied: no)",
    );
    expect(authorizeErrorText(new URLSearchParams("error=login_required"))).toBe("the identity provider refused the sign-in (login_required)");
  });
  it("checks the discovery document names the configured issuer and both endpoints", () => {
    const d = { issuer: "https://idp.example/", authorization_endpoint: "https://idp.example/a", token_endpoint: "https://idp.example/t" };
    expect(() => checkDiscovery("https://idp.example", d)).not.toThrow();
    expect(() => checkDiscovery("https://other.example", d)).toThrow(/issuer/);
    expect(() => checkDiscovery("https://idp.example/", { ...d, token_endpoint: undefined })).toThrow(/token endpoint/);
  });
  it("keeps where the user was going on a failed sign-in", () => {
    const e = new SignInError("x", "/clusters/c1");
    expect(e).toBeInstanceOf(Error);
    expect(e.returnTo).toBe("/clusters/c1");
    expect(new SignInError("y").returnTo).toBe("/clusters");
  });
});

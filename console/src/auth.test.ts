import { describe, expect, it } from "vitest";
import { pkceChallenge, tokenClaims } from "./auth";

describe("auth", () => {
  it("computes the S256 PKCE challenge (RFC 7636 appendix B)", async () => {
    expect(await pkceChallenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")).toBe("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
  });
  it("reads display claims from a JWT without trusting it", () => {
    const p = btoa(JSON.stringify({ sub: "dev-demo", tenant_id: "demo" })).replace(/=+$/, "");
    expect(tokenClaims(`x.${p}.y`).sub).toBe("dev-demo");
    expect(tokenClaims("garbage")).toEqual({});
  });
});

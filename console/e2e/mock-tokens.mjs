// Prints unsigned JWT-shaped tokens for two tenants, for e2e/mock-server.mjs only (it does not verify them).
const tok = (sub) => [{ alg: "none", typ: "JWT" }, { sub, tenant: sub, exp: 4102444800 }]
  .map((p) => Buffer.from(JSON.stringify(p)).toString("base64url")).join(".") + ".mock";
console.log(`TOKEN_A=${tok("tenant-a")}\nTOKEN_B=${tok("tenant-b")}`);

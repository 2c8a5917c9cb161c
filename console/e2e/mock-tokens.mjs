// Prints unsigned JWT-shaped tokens for e2e/mock-server.mjs only (it does not verify them): tenants A and B
// (no `scope` claim: everything), and another principal of tenant A who may only approve (TOKEN_APPROVER);
// E2E_ROLLOUT: tenant A's paused rollout the mock starts with (e2e/mock-rollouts.mjs).
import { MOCK_ROLLOUT } from "./mock-rollouts.mjs";
const tok = (sub, tenant = sub, extra = {}) => [{ alg: "none", typ: "JWT" }, { sub, tenant, exp: 4102444800, ...extra }]
  .map((p) => Buffer.from(JSON.stringify(p)).toString("base64url")).join(".") + ".mock";
console.log(`TOKEN_A=${tok("tenant-a")}\nTOKEN_B=${tok("tenant-b")}\nTOKEN_APPROVER=${tok("approver-a", "tenant-a", { scope: "operations:approve" })}\nE2E_ROLLOUT=${MOCK_ROLLOUT}`);

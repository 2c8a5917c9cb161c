import { defineConfig } from "vite";
import preact from "@preact/preset-vite";

// The API is same-origin (devstack serves console/dist at `/` next to /v1). For `npm run dev`, set
// STRATO_API to devstack's HTTP address to proxy /v1 and /console.json there.
const api = process.env.STRATO_API;

export default defineConfig({
  plugins: [preact()],
  build: { outDir: "dist", sourcemap: true, target: "es2022" },
  server: api ? { proxy: { "/v1": api, "/console.json": api } } : {},
  test: { environment: "node", include: ["src/**/*.test.ts"] },
});

// History routing (devstack falls back to index.html for non-/v1 paths).

import { useEffect, useState } from "preact/hooks";

export type Route =
  | { page: "dashboard" }
  | { page: "clusters" }
  | { page: "cluster"; id: string; tab?: string }
  | { page: "create" }
  | { page: "operation"; id: string }
  | { page: "webhook" }
  | { page: "cloud-access" }
  | { page: "audit" }
  | { page: "admin-tenants" }
  | { page: "admin-tenant"; id: string }
  | { page: "admin-clusters" }
  | { page: "admin-operations" }
  | { page: "admin-templates" }
  | { page: "rollouts" }
  | { page: "rollout"; id: string }
  | { page: "admin-rollouts" }
  | { page: "admin-rollout"; id: string }
  | { page: "login" }
  | { page: "notfound" };

export function parseRoute(path: string): Route {
  const p = path.replace(/\/+$/, "") || "/";
  let m: RegExpExecArray | null;
  if (p === "/" || p === "/dashboard") return { page: "dashboard" };
  if (p === "/clusters") return { page: "clusters" };
  if (p === "/clusters/new") return { page: "create" };
  if ((m = /^\/clusters\/([^/]+)$/.exec(p))) return { page: "cluster", id: decodeURIComponent(m[1]) };
  if ((m = /^\/clusters\/([^/]+)\/([a-z]+)$/.exec(p))) return { page: "cluster", id: decodeURIComponent(m[1]), tab: m[2] };
  if ((m = /^\/operations\/([^/]+)$/.exec(p))) return { page: "operation", id: decodeURIComponent(m[1]) };
  if (p === "/webhook") return { page: "webhook" };
  if (p === "/cloud-access") return { page: "cloud-access" };
  if (p === "/audit") return { page: "audit" };
  if (p === "/admin" || p === "/admin/tenants") return { page: "admin-tenants" };
  if ((m = /^\/admin\/tenants\/([^/]+)$/.exec(p))) return { page: "admin-tenant", id: decodeURIComponent(m[1]) };
  if (p === "/admin/clusters") return { page: "admin-clusters" };
  if (p === "/admin/operations") return { page: "admin-operations" };
  if (p === "/admin/templates") return { page: "admin-templates" };
  if (p === "/rollouts") return { page: "rollouts" };
  if ((m = /^\/rollouts\/([^/]+)$/.exec(p))) return { page: "rollout", id: decodeURIComponent(m[1]) };
  if (p === "/admin/rollouts") return { page: "admin-rollouts" };
  if ((m = /^\/admin\/rollouts\/([^/]+)$/.exec(p))) return { page: "admin-rollout", id: decodeURIComponent(m[1]) };
  if (p === "/login") return { page: "login" };
  return { page: "notfound" };
}

const subs = new Set<() => void>();

export function navigate(to: string, replace = false): void {
  if (replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  subs.forEach((s) => s());
}

export function useRoute(): Route {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const on = () => setPath(location.pathname);
    subs.add(on);
    addEventListener("popstate", on);
    return () => {
      subs.delete(on);
      removeEventListener("popstate", on);
    };
  }, []);
  return parseRoute(path);
}

/** Click handler for in-app links: plain clicks navigate without a reload. */
export function linkClick(e: MouseEvent): void {
  const a = (e.currentTarget as HTMLAnchorElement) ?? null;
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  navigate(a.getAttribute("href") ?? "/");
}

import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import "./styles.css";
import { loadConfig, getConfig } from "./config";
import { currentToken, oidcCallback, SignInError, onTokenChange, setToken, signOut, takeFragmentToken, tokenClaims } from "./auth";
import { linkClick, navigate, useRoute } from "./router";
import { Link } from "./ui";
import { ClustersPage } from "./pages/Clusters";
import { DashboardPage } from "./pages/Dashboard";
import { ClusterPage } from "./pages/Cluster";
import { CreatePage } from "./pages/Create";
import { OperationPage } from "./pages/Operation";
import { WebhookPage } from "./pages/Webhook";
import { CloudAccessPage } from "./pages/CloudAccess";
import { AuditPage } from "./pages/Audit";
import { LoginPage } from "./pages/Login";
import { AdminTenantsPage } from "./pages/AdminTenants";
import { AdminTenantPage } from "./pages/AdminTenant";
import { AdminClustersPage } from "./pages/AdminClusters";
import { AdminOperationsPage } from "./pages/AdminOperations";
import { isOperator } from "./operator";
import { RolloutsPage } from "./pages/Rollouts";
import { AdminTemplatesPage } from "./pages/AdminTemplates";
import { RolloutPage } from "./pages/Rollout";

function App({ signInError }: { signInError?: string }) {
  const route = useRoute();
  const [token, setTok] = useState(currentToken());
  const [why, setWhy] = useState<string | undefined>();
  const [failed, setFailed] = useState(signInError);
  useEffect(
    () =>
      onTokenChange((t, w) => {
        setTok(t);
        setWhy(w);
        setFailed(undefined);
        if (!t && location.pathname !== "/login") navigate(`/login?next=${encodeURIComponent(location.pathname)}`, true);
      }),
    [],
  );
  // An operator's token names no tenant: the tenant pages would only answer 403, so its console is the
  // operator's pages.
  const operator = token ? isOperator(tokenClaims(token)) : false;
  const misplaced = operator && !route.page.startsWith("admin-") && route.page !== "login" && route.page !== "notfound";
  useEffect(() => {
    if (misplaced) navigate("/admin/tenants", true);
  }, [misplaced]);
  if (!token || route.page === "login") return <LoginPage reason={why} error={failed} />;
  const claims = tokenClaims(token);
  const sub = claims.sub;
  if (misplaced) return null;
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="/" onClick={linkClick}><img src="/favicon.svg" alt="" width={20} height={20} /> Strato</a>
        <nav aria-label="Main">
          {operator ? (
            <ul>
              <li><Link href="/admin/tenants">Tenants</Link></li>
              <li><Link href="/admin/clusters">All clusters</Link></li>
              <li><Link href="/admin/operations">Operations</Link></li>
              <li><Link href="/admin/templates">Templates</Link></li>
              <li><Link href="/admin/rollouts">Rollouts</Link></li>
            </ul>
          ) : (
          <ul>
            <li><Link href="/">Dashboard</Link></li>
            <li><Link href="/clusters">Clusters</Link></li>
            <li><Link href="/clusters/new">New cluster</Link></li>
            <li><Link href="/webhook">Webhook</Link></li>
            <li><Link href="/rollouts">Rollouts</Link></li>
            <li><Link href="/cloud-access">Cloud access</Link></li>
            <li><Link href="/audit">Audit log</Link></li>
          </ul>
          )}
        </nav>
        <span class="who">{sub ? `Signed in as ${sub}` : "Signed in"}{operator ? " (platform operator)" : ""}</span>
        <button type="button" class="secondary" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <main id="main">
        {route.page === "dashboard" && <DashboardPage />}
        {route.page === "clusters" && <ClustersPage />}
        {route.page === "cluster" && <ClusterPage key={route.id} id={route.id} tab={route.tab} />}
        {route.page === "create" && <CreatePage />}
        {route.page === "operation" && <OperationPage key={route.id} id={route.id} />}
        {route.page === "webhook" && <WebhookPage />}
        {route.page === "cloud-access" && <CloudAccessPage />}
        {route.page === "audit" && <AuditPage />}
        {route.page === "admin-tenants" && <AdminTenantsPage />}
        {route.page === "admin-tenant" && <AdminTenantPage key={route.id} id={route.id} />}
        {route.page === "admin-clusters" && <AdminClustersPage />}
        {route.page === "admin-operations" && <AdminOperationsPage />}
        {route.page === "admin-templates" && <AdminTemplatesPage />}
        {route.page === "rollouts" && <RolloutsPage operator={false} />}
        {route.page === "rollout" && <RolloutPage key={route.id} id={route.id} operator={false} />}
        {route.page === "admin-rollouts" && <RolloutsPage operator />}
        {route.page === "admin-rollout" && <RolloutPage key={route.id} id={route.id} operator />}
        {route.page === "notfound" && (
          <p>
            No such page. <Link href="/clusters">Go to your clusters</Link>.
          </p>
        )}
      </main>
    </>
  );
}

async function start() {
  const fragment = takeFragmentToken();
  const cfg = await loadConfig();
  const root = document.getElementById("app")!;
  let signInError: string | undefined;
  if (fragment) setToken(fragment);
  else if (cfg.auth.kind === "oidc") {
    try {
      const back = await oidcCallback(cfg.auth);
      if (back) history.replaceState(null, "", back);
    } catch (e) {
      // Shown on the sign-in page (role="alert"), which keeps where the user was going.
      signInError = `Sign-in failed: ${(e as Error).message}`;
      if (e instanceof SignInError) history.replaceState(null, "", e.returnTo);
    }
  }
  if (!currentToken() && location.pathname !== "/login") {
    history.replaceState(null, "", `/login?next=${encodeURIComponent(location.pathname)}`);
  }
  void getConfig;
  render(<App signInError={signInError} />, root);
}

void start();

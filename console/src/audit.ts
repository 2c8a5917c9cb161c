// How an audit entry reads: the action in words, the actor (Strato's own functions named as such), the
// outcome with its HTTP status, and why a request was refused (the entry's detail). Pure, unit-tested.

const ACTIONS: Record<string, string> = {
  "cluster.create": "Create cluster",
  "cluster.update": "Update cluster",
  "cluster.delete": "Delete cluster",
  "cluster.retry": "Retry cluster",
  "cluster.drift_check": "Check drift",
  "cluster.expire": "Delete expired cluster",
  "cluster.expiring": "Expiry notice",
  "operation.end": "Operation ended",
  "operation.awaiting_approval": "Plan waits for approval",
  "operation.started": "Operation started",
  "operation.succeeded": "Operation succeeded",
  "operation.failed": "Operation failed",
  "cluster.state_changed": "Cluster state changed",
  "drift.detected": "Drift detected",
  "operation.cancel": "Cancel operation",
  "operation.approve": "Approve plan",
  "operation.reject": "Reject plan",
  "operation.dispatch": "Start operation",
  "operation.requeue": "Requeue operation",
  "approval.expire": "Approval expired",
  "state.restore": "Restore state version",
  "webhook.put": "Set webhook",
  "webhook.delete": "Remove webhook",
  "policy.put": "Set policy",
  "policy.delete": "Remove policy",
  "lock.release": "Release state lock",
  "drift.reconcile": "Reconcile drift",
  "admin.tenant.create": "Register tenant",
  "admin.tenant.update": "Change tenant settings",
  "admin.template.publish": "Publish template version",
  "admin.template.deprecate": "Deprecate template version",
  "admin.template.yank": "Yank template version",
  "rollout.start": "Start rollout",
  "rollout.pause": "Pause rollout",
  "rollout.resume": "Resume rollout",
  "rollout.abort": "Abort rollout",
};

/** "cluster.create" → "Create cluster"; an unknown action as it is. */
export function actionText(action: string): string {
  return ACTIONS[action] ?? action;
}

/** The token's subject as it is; `strato:scheduler` → "Strato (scheduler)". */
export function actorText(actor: string): string {
  return actor.startsWith("strato:") ? `Strato (${actor.slice(7)})` : actor;
}

/** `refused 403` / `failed 500`; any other outcome (`accepted`, `succeeded`, `cancelled`), or one without a
 * status (Strato's own actions, an operation's end), as it is. */
export function outcomeText(e: { outcome: string; status?: number | null }): string {
  return (e.outcome === "refused" || e.outcome === "failed") && e.status ? `${e.outcome} ${e.status}` : e.outcome;
}

/** Why: shown for refused and failed entries (the API's problem detail), not for the routine ones. */
export function reasonText(e: { outcome: string; detail?: string | null }): string | null {
  return (e.outcome === "refused" || e.outcome === "failed" || e.outcome === "cancelled") && e.detail ? e.detail : null;
}

/** A cluster's name where the id is known to be one of the tenant's clusters, else the id. */
export function clusterText(id: string, names: ReadonlyMap<string, string>): string {
  return names.get(id) ?? id;
}

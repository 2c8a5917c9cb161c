// How a cluster page runs an action (delete, restore, a settings change): what it is, and the call that
// starts its operation. The page defines it and its tabs take it, so it stands apart from both.

import type { Cluster } from "../api/client";

export type Act = (what: string, call: () => Promise<{ data?: { operation: { id: string }; cluster?: Cluster }; error?: unknown; response: Response }>) => Promise<void>;

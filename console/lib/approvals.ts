// Approvals and capability grants as the API shows them (docs/http-api.md, "Approver endpoints"), and the grant
// lifetimes an approver may choose for one.

/** An effect and its exact target. */
export interface Scope {
  kind: string;
  value: string;
}

/** `GET /v1/approvals` rows. */
export interface Approval {
  id: string;
  runId: string;
  sessionId: string;
  bindingId: string;
  via: string;
  effect: string;
  target: Scope;
  /** The runner's own words: untrusted, shown as text. */
  summary: string;
  dataClass: string | null;
  destination: string | null;
  risk: { score: number; level: 'low' | 'medium' | 'high'; reasons: string[] };
  goalRevision: number;
  groupId: string | null;
  requestedLifetime: Lifetime;
  status: 'pending' | 'approved' | 'denied' | 'expired' | 'void';
  createdAt: string;
  expiresAt: string;
  decidedAt: string | null;
  decidedBy: string | null;
  reason: string | null;
  grantId: string | null;
}

/** `GET /v1/grants` rows. */
export interface Grant {
  id: string;
  capability: string;
  scope: Scope;
  lifetime: Lifetime;
  bindingId: string;
  sessionId: string | null;
  runId: string | null;
  grantor: string;
  approvalId: string | null;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  revokedBy: string | null;
  usedAt: string | null;
}

/** A grant lifetime, shortest first. */
export type Lifetime = 'once' | 'run' | 'session' | 'binding';
const LIFETIMES: Lifetime[] = ['once', 'run', 'session', 'binding'];

/** What each lifetime means, for the approver's choice. */
export const LIFETIME_TEXT: Record<Lifetime, string> = {
  once: 'this action only (no grant)',
  run: 'for the rest of this run',
  session: 'for this session',
  binding: 'for every session of this binding',
};

/** The lifetimes an approval may be approved with: none longer than it asked for (the API refuses wider). */
export function lifetimesFor(requested: Lifetime): Lifetime[] {
  const last = LIFETIMES.indexOf(requested);
  return LIFETIMES.slice(0, last === -1 ? 1 : last + 1);
}

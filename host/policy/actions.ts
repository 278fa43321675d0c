// The vocabulary of issue 14 (docs/approvals.md): what a run wants (an action), what the host decides about it (a
// verdict), the rules a binding writes and the capability grants an approval leaves behind. Types only: the
// classifier (classify.ts), the rule evaluator (rules.ts) and grant coverage (grantCoverage.ts) implement them.

/**
 * The kinds of side effect, weakest first: when the host's classification and a runner's claim differ, the later one
 * in this list is taken. `fs.read`/`fs.write` keep the protocol's wire names.
 */
export const EFFECTS = ['fs.read', 'fs.write', 'exec', 'network', 'credential', 'destructive', 'publish'] as const;
/** One kind of side effect. */
export type Effect = (typeof EFFECTS)[number];

/** What a scope names: a path (workspace-relative or absolute), a host name, a shell command, or an MCP tool. */
export type ScopeKind = 'path' | 'domain' | 'command' | 'tool';

/** The exact thing an action touches, or the scope a rule or grant names. */
export interface Scope {
  kind: ScopeKind;
  /**
   * path: a normalised path (`src/a.ts`, `/etc/x`); domain: a lower-case host; command: the text; tool:
   * `server/tool`.
   */
  value: string;
}

/**
 * One thing a run wants, after the host classified it. A shell command is one action whose `parts` are its
 * classified pieces (the action's effect is the strongest of theirs).
 */
export interface Action {
  effect: Effect;
  target: Scope;
  /** Who asked, through what: `runner` (approval/request), `fs/write`, `claude-code:Bash`, `acp`, `mcp`, `egress`. */
  via: string;
  /** The runner's or harness's own words for it (untrusted: shown, never interpreted). */
  summary?: string;
  /** A command's parts, each classified (absent for anything but a command). */
  parts?: Action[];
  /**
   * A command the splitter could not take apart cleanly (here-docs, `eval`, unbalanced quotes, `sh -c "$x"`):
   * risk `high`, and no command-class grant or rule covers it.
   */
  opaque?: boolean;
}

/** What the host does with an action. */
export type Decision = 'allow' | 'ask' | 'deny';

/** A binding's rule (`policy:` in paddock.yaml): one match, one decision. */
export interface PolicyRule {
  /** The effect it applies to, or `*` for every effect. */
  effect: Effect | '*';
  /** Exactly one of these (a glob for path, `*.example.com` for domain, an exact command or a prefix ending ` *`). */
  match: { path?: string; domain?: string; command?: string; tool?: string };
  decision: Decision;
  /** Shown to the approver and in the audit record. */
  why?: string;
}

/** How long a capability grant lives. */
export type GrantLifetime = 'once' | 'run' | 'session' | 'binding';

/** A capability grant: an approval's lasting answer, never wider than what it names. */
export interface CapabilityGrant {
  id: string;
  capability: Effect;
  scope: Scope;
  lifetime: GrantLifetime;
  tenant: string;
  bindingId: string;
  /** Set for lifetime `session` (and `run`/`once`, which also carry their run). */
  sessionId?: string;
  /** Set for lifetime `run` and `once`. */
  runId?: string;
  /** The approver (`api:<token>/user:<by>`, `cli:<user>`). */
  grantor: string;
  createdAt: string;
  expiresAt?: string;
  revokedAt?: string;
  /** A `once` grant is used up by the action it allowed. */
  usedAt?: string;
}

/** Risk of an action, for approvers and for grouping asks. */
export interface Risk {
  /** 0–100. */
  score: number;
  level: 'low' | 'medium' | 'high';
  /** What raised it, in words ("secret path", "outside the workspace", "no sandbox"). */
  reasons: string[];
}

/** Who decided, in the mechanism's own terms (every report is computed from this). */
export type DecidedBy =
  | { kind: 'rule'; rule: PolicyRule; index: number; why?: string }
  | { kind: 'default'; why: string }
  | { kind: 'floor'; why: string }
  /** `grantIds`: every grant a command's parts used, when more than one (each `once` among them is used up). */
  | { kind: 'grant'; grantId: string; grantIds?: string[] }
  | { kind: 'taint'; why: string };

/** The host's decision about one action, and why. */
export interface Verdict {
  decision: Decision;
  action: Action;
  risk: Risk;
  decidedBy: DecidedBy;
}

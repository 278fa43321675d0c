import type { RunnerManifestFile } from '../plugins/manifest.js';
import { terminalSafe } from '../util/terminalText.js';

/**
 * What a runner package asks for, computed from its manifest (docs/runner-packages.md, "Permissions review"): what
 * the admin reviews and accepts at install, and what an update is compared with.
 */
export interface RunnerPermissions {
  /** Host requests it may call (a binding must still grant each). */
  hostRequests: string[];
  /** Kinds of resources it can use. */
  resources: string[];
  /** Side effects it (or the harness it wraps) may cause by itself: `network`, `exec`, `fs.write`, … */
  effects: string[];
  /** It takes user messages during a run. */
  append: boolean;
  /** The names of the literal variables it sets for its own process. */
  env: string[];
  /** Its default per-run limits (the host's limits cap them). */
  limits: Record<string, number>;
  /** Its risk note for admins. */
  risk: string;
  /** It needs its install scripts run (a native build). */
  nativeBuild: boolean;
}

/** The permissions of a manifest, lists sorted so that two equal sets compare equal. */
export function permissionsOf(manifest: RunnerManifestFile): RunnerPermissions {
  const sorted = (xs: readonly string[]) => [...new Set(xs)].sort();
  return {
    hostRequests: sorted(manifest.capabilities.hostRequests),
    resources: sorted(manifest.resources),
    effects: sorted(manifest.effects),
    append: manifest.capabilities.append,
    env: sorted(Object.keys(manifest.env)),
    limits: Object.fromEntries(
      Object.entries(manifest.limits)
        .filter((e): e is [string, number] => typeof e[1] === 'number')
        .sort(([a], [b]) => (a < b ? -1 : 1)),
    ),
    risk: manifest.risk,
    nativeBuild: manifest.install?.nativeBuild === true,
  };
}

/** How an update's permissions differ from the accepted ones. */
export interface PermissionsDiff {
  /** What asks for more (each needs acceptance again): one line each, e.g. `+ host request state/set`. */
  widened: string[];
  /** What asks for less (accepted as before). */
  narrowed: string[];
}

/**
 * Compare `next` with the accepted `before`. Widening: a host request, resource kind, effect or env name added,
 * taking messages, a default limit raised or dropped (the host's cap then applies), a native build, a changed risk
 * note (the author says something new about the risk). Narrowing is the reverse; a changed env value is neither.
 */
export function diffPermissions(before: RunnerPermissions, next: RunnerPermissions): PermissionsDiff {
  const widened: string[] = [];
  const narrowed: string[] = [];
  const sets: [keyof RunnerPermissions & ('hostRequests' | 'resources' | 'effects' | 'env'), string][] = [
    ['hostRequests', 'host request'],
    ['resources', 'resource kind'],
    ['effects', 'effect'],
    ['env', 'env name'],
  ];
  for (const [key, label] of sets) {
    const had = new Set(before[key]);
    const has = new Set(next[key]);
    for (const x of next[key]) if (!had.has(x)) widened.push(`+ ${label} ${x}`);
    for (const x of before[key]) if (!has.has(x)) narrowed.push(`- ${label} ${x}`);
  }
  if (next.append && !before.append) widened.push('+ takes messages during a run');
  if (!next.append && before.append) narrowed.push('- takes messages during a run');
  if (next.nativeBuild && !before.nativeBuild) widened.push('+ needs a native build (install scripts run)');
  if (!next.nativeBuild && before.nativeBuild) narrowed.push('- needs a native build');
  for (const key of [...new Set([...Object.keys(before.limits), ...Object.keys(next.limits)])].sort()) {
    const was = before.limits[key];
    const is = next.limits[key];
    if (was === is) continue;
    if (is === undefined) widened.push(`+ limit ${key}: ${was} → the host's limit`);
    else if (was === undefined) narrowed.push(`- limit ${key}: the host's limit → ${is}`);
    else (is > was ? widened : narrowed).push(`${is > was ? '+' : '-'} limit ${key}: ${was} → ${is}`);
  }
  if (next.risk !== before.risk)
    widened.push(`± risk note: ${JSON.stringify(before.risk)} → ${JSON.stringify(next.risk)}`);
  return { widened, narrowed };
}

/** The permissions as lines for a terminal: every manifest string one line, its controls escaped. */
export function renderPermissions(p: RunnerPermissions): string[] {
  const list = (xs: readonly string[]) => (xs.length === 0 ? 'none' : xs.map((x) => terminalSafe(x)).join(', '));
  const limits = Object.entries(p.limits);
  return [
    `  host requests:  ${list(p.hostRequests)}`,
    `  resource kinds: ${list(p.resources)}`,
    `  effects:        ${list(p.effects)}` +
      (p.effects.includes('network') ? '  (network: reaches the network itself)' : ''),
    `  messages:       ${p.append ? 'takes user messages during a run' : 'no'}`,
    `  env names:      ${list(p.env)}`,
    `  default limits: ${limits.length === 0 ? "the host's" : limits.map(([k, v]) => `${k}=${v}`).join(', ')}`,
    `  native build:   ${p.nativeBuild ? 'yes: its install scripts run on this host, as the host user' : 'no'}`,
    `  risk:           ${p.risk === '' ? '(none given)' : terminalSafe(p.risk)}`,
  ];
}

// Does a capability grant cover an action (docs/approvals.md §3)? Coverage never widens: a grant covers what it
// names and, for a folder or a wildcard it names itself, what is beneath it; nothing else, and only while live.
import type { Action, CapabilityGrant } from './actions.js';
import { domainMatch, normalDomain } from './globMatch.js';
import { splitCommand } from './shellParts.js';

/** Who and when an action happens, for the grant's lifetime and owner checks. */
export interface CoverageContext {
  now: Date;
  tenant: string;
  bindingId: string;
  sessionId?: string;
  runId?: string;
}

/**
 * Is the grant live for this context: not revoked, not expired, a `once` grant not used, and the tenant, binding,
 * session and run it was made for? An unreadable `expiresAt` counts as expired.
 */
export function isLive(grant: CapabilityGrant, ctx: CoverageContext): boolean {
  if (grant.revokedAt !== undefined) return false;
  if (grant.expiresAt !== undefined) {
    const at = Date.parse(grant.expiresAt);
    if (!Number.isFinite(at) || ctx.now.getTime() >= at) return false;
  }
  if (grant.lifetime === 'once' && grant.usedAt !== undefined) return false;
  if (grant.tenant !== ctx.tenant || grant.bindingId !== ctx.bindingId) return false;
  const needsSession = grant.lifetime === 'session';
  const needsRun = grant.lifetime === 'run' || grant.lifetime === 'once';
  // A grant that names a session or run is bound to it whatever its lifetime says; one its lifetime needs but
  // that it does not name covers nothing (never "every session").
  if ((needsSession || grant.sessionId !== undefined) && (!grant.sessionId || grant.sessionId !== ctx.sessionId))
    return false;
  if ((needsRun || grant.runId !== undefined) && (!grant.runId || grant.runId !== ctx.runId)) return false;
  return true;
}

/** Does a path grant's value cover a path: equal, or a folder (ending `/`) the path is beneath; never via `..`. */
export function pathCovers(grantPath: string, path: string): boolean {
  const climbs = (p: string) => p.split('/').includes('..');
  if (grantPath === '' || climbs(grantPath) || climbs(path)) return false;
  return path === grantPath || (grantPath.endsWith('/') && path.startsWith(grantPath));
}

/** Does a tool grant's value cover a tool: equal, or `server/*` for that server's tools. */
export function toolCovers(grantTool: string, tool: string): boolean {
  if (grantTool.endsWith('/*')) {
    const server = grantTool.slice(0, -1);
    return server.length > 1 && tool.startsWith(server) && tool.length > server.length;
  }
  return grantTool === tool;
}

/** The argv of a single, cleanly split simple command; undefined for anything else. */
export function singleArgv(text: string): string[] | undefined {
  const split = splitCommand(text);
  return !split.opaque && split.parts.length === 1 && split.redirects.length === 0 ? split.parts[0] : undefined;
}

/** Is `prefix` an argv prefix of `argv` (`npm test` of `npm test --watch`, not of `npm testx`)? */
function argvStartsWith(argv: string[], prefix: string[]): boolean {
  return prefix.length > 0 && prefix.length <= argv.length && prefix.every((w, i) => argv[i] === w);
}

/**
 * Does a command grant's value cover one simple command's text? Exactly the same argv, unless the value ends with
 * ` *` (then an argv prefix: `npm test *` covers `npm test --watch`). An outside attack showed why exact is the
 * default: a grant of `git push origin main` also covered `… --force`, and `npm test` covered
 * `npm test --script-shell=./evil.sh`.
 */
export function commandCovers(grantCommand: string, command: string): boolean {
  const isPrefix = grantCommand.endsWith(' *');
  const want = singleArgv(isPrefix ? grantCommand.slice(0, -2) : grantCommand);
  const argv = singleArgv(command);
  if (want === undefined || argv === undefined) return false;
  return isPrefix ? argvStartsWith(argv, want) : argv.length === want.length && argvStartsWith(argv, want);
}

/** Does the grant's scope cover the action's target (effects and liveness aside)? */
function scopeCovers(grant: CapabilityGrant, action: Action): boolean {
  const { scope } = grant;
  const { target } = action;
  if (scope.kind !== target.kind) return false;
  switch (scope.kind) {
    case 'path':
      return pathCovers(scope.value, target.value);
    case 'domain':
      return scope.value.startsWith('*.')
        ? domainMatch(scope.value, target.value)
        : normalDomain(scope.value) === normalDomain(target.value);
    case 'tool':
      return toolCovers(scope.value, target.value);
    case 'command':
      return commandCovers(scope.value, target.value);
  }
}

/**
 * Does a live grant cover the action? Its capability must be the action's effect and its scope must cover the
 * target; for a command, every part must be covered (a file redirect, being a path, never is by a command grant),
 * and an opaque command never is.
 */
export function covers(grant: CapabilityGrant, action: Action, ctx: CoverageContext): boolean {
  if (!isLive(grant, ctx) || grant.capability !== action.effect || action.opaque) return false;
  if (action.target.kind === 'command' && action.parts && action.parts.length > 0)
    return grant.scope.kind === 'command' && action.parts.every((p) => covers(grant, p, ctx));
  return scopeCovers(grant, action);
}

/**
 * Does the grant cover the action and name exactly its target (no folder, no wildcard, no prefix)? What a tainted
 * run needs to send anything out (docs/approvals.md §6).
 */
export function coversExactly(grant: CapabilityGrant, action: Action, ctx: CoverageContext): boolean {
  if (!covers(grant, action, ctx) || grant.scope.kind !== action.target.kind) return false;
  if (grant.scope.kind === 'domain') return normalDomain(grant.scope.value) === normalDomain(action.target.value);
  return grant.scope.value === action.target.value;
}

import { existsSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import type { z } from 'zod';
import { HostError } from '../errors.js';
import type { RunnerCatalog } from '../plugins/catalog.js';
import { validateRunnerConfig } from '../plugins/configSchema.js';
import { findInlineSecret, findString } from '../secrets/inlineSecrets.js';
import { registerConfigSecrets } from '../secrets/hostSecrets.js';
import type { Redactor } from '../secrets/redactor.js';
import { routeKey, routesOverlap } from './routing.js';
import { ConfigFileSchema, type ConfigFile, type Resources } from './schema.js';

/** What validation checks references and paths against. */
export interface ValidationContext {
  catalog: RunnerCatalog;
  /** Host directories under which mounts may lie. */
  mountRoots: readonly string[];
  /** The host's redactor: a config may not contain the value of any secret it knows. */
  redactor?: Redactor;
}

const invalid = (field: string, message: string): never => {
  throw new HostError('CONFIG_INVALID', `${field}: ${message}`, { field });
};

/** `a.b[0].c` from a zod issue path. */
export function fieldPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((acc, part) => (typeof part === 'number' ? `${acc}[${part}]` : acc ? `${acc}.${String(part)}` : String(part)), '');
}

/** Parse with a zod schema; the error names the first bad field. */
export function parseOrExplain<T extends z.ZodType>(schema: T, value: unknown, prefix = ''): z.infer<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = fieldPath([...(prefix ? [prefix] : []), ...issue.path]) || '(root)';
  return invalid(field, issue.message);
}

/** Parse `paddock.yaml` text (YAML or JSON) into plain data; a syntax error names the line. */
export function parseConfigText(text: string, source: string): unknown {
  try {
    return parseYaml(text, { prettyErrors: true }) ?? {};
  } catch (error) {
    const where = error instanceof YAMLParseError && error.linePos ? ` (line ${error.linePos[0].line})` : '';
    throw new HostError('CONFIG_INVALID', `${source}${where}: not valid YAML: ${(error as Error).message.split('\n')[0]}`, { field: '(root)' });
  }
}

/** Real path of `path` if it lies under one of `roots` (symlinks resolved on both sides). */
export function insideRoots(path: string, roots: readonly string[]): string | undefined {
  if (!existsSync(path)) return undefined;
  const real = realpathSync(path);
  for (const root of roots) {
    if (!existsSync(root)) continue;
    const rel = relative(realpathSync(root), real);
    if (rel === '' || (!rel.startsWith('..') && !isAbsolute(rel))) return real;
  }
  return undefined;
}

/**
 * Validate a whole configuration: no inline secret anywhere, every field well-formed, ids
 * unique, every reference resolvable (in this file, or in `stored` objects the apply keeps),
 * each binding's config valid for its runner, tool grants inside the server's lists, mounts
 * under an allowed root, no two enabled bindings claiming the same route. Throws
 * `CONFIG_INVALID` naming the field; returns the parsed file (defaults applied).
 */
export function validateConfig(raw: unknown, context: ValidationContext, stored: Partial<Resources> = {}): ConfigFile {
  const secret = findInlineSecret(raw);
  if (secret) invalid(secret.field || '(root)', `apparent inline secret: ${secret.why}`);
  const file = parseOrExplain(ConfigFileSchema, raw);
  if (context.redactor) {
    const redactor = context.redactor;
    registerConfigSecrets(redactor, file.resources);
    const field = findString(raw, (text) => redactor.text(text) !== text);
    if (field) invalid(field, 'holds the value of a secret the host knows (a key the configuration references, or a credential in its environment); reference it with { env: NAME } or { file: /path }');
  }

  const known: Record<keyof Resources, Map<string, unknown>> = {} as never;
  for (const kind of Object.keys(file.resources) as (keyof Resources)[]) {
    const ids = new Map<string, unknown>();
    for (const item of stored[kind] ?? []) ids.set((item as { id: string }).id, item);
    const inFile = new Set<string>();
    file.resources[kind].forEach((item, i) => {
      if (inFile.has(item.id)) invalid(`resources.${kind}[${i}].id`, `duplicate id "${item.id}"`);
      inFile.add(item.id);
      ids.set(item.id, item);
    });
    known[kind] = ids;
  }
  file.resources.mounts.forEach((m, i) => {
    if (context.mountRoots.length === 0) invalid(`resources.mounts[${i}].path`, 'no mount roots are configured (PADDOCK_MOUNT_ROOTS); mounts are refused');
    if (!existsSync(m.path) || !statSync(m.path).isDirectory()) invalid(`resources.mounts[${i}].path`, `${m.path} is not a directory`);
    if (!insideRoots(m.path, context.mountRoots)) invalid(`resources.mounts[${i}].path`, `${m.path} is not under an allowed mount root (${context.mountRoots.join(', ')})`);
  });
  for (const [kind, wantDir] of [['skills', true], ['artifacts', false]] as const) {
    file.resources[kind].forEach((r, i) => {
      const ok = existsSync(r.path) && (wantDir ? statSync(r.path).isDirectory() : statSync(r.path).isFile());
      if (!ok) invalid(`resources.${kind}[${i}].path`, `${r.path} is not ${wantDir ? 'a directory' : 'a file'}`);
      if (wantDir && !existsSync(join(r.path, 'SKILL.md'))) invalid(`resources.${kind}[${i}].path`, `${r.path} has no SKILL.md`);
    });
  }
  file.resources.knowledgeBases.forEach((k, i) => {
    if (k.path && !(existsSync(k.path) && statSync(k.path).isDirectory())) invalid(`resources.knowledgeBases[${i}].path`, `${k.path} is not a directory`);
  });

  const bindingIds = new Set<string>();
  file.bindings.forEach((b, i) => {
    const at = `bindings[${i}]`;
    if (bindingIds.has(b.id)) invalid(`${at}.id`, `duplicate id "${b.id}"`);
    bindingIds.add(b.id);
    const runner = context.catalog.runners.get(b.runner);
    if (!runner) {
      const broken = context.catalog.problems.find((p) => p.file.includes(`/${b.runner}/`));
      invalid(`${at}.runner`, broken ? `runner "${b.runner}" has a broken manifest: ${broken.message}` : `no runner "${b.runner}" (see paddock runners list)`);
    }
    const checked = validateRunnerConfig(runner!.manifest.configSchema, b.config);
    if (!checked.ok) invalid(`${at}.config${checked.field ? `.${checked.field}` : ''}`, checked.message);
    for (const kind of ['models', 'knowledgeBases', 'skills', 'artifacts', 'mounts'] as const) {
      b.grants[kind].forEach((id, j) => {
        if (!known[kind].has(id)) invalid(`${at}.grants.${kind}[${j}]`, `no ${kind} resource "${id}"`);
      });
    }
    b.grants.mcpServers.forEach((grant, j) => {
      const id = typeof grant === 'string' ? grant : grant.id;
      const server = known.mcpServers.get(id) as { tools: { allow?: string[]; deny: string[] } } | undefined;
      if (!server) return invalid(`${at}.grants.mcpServers[${j}]`, `no mcpServers resource "${id}"`);
      if (typeof grant === 'string') return;
      grant.tools?.forEach((tool, k) => {
        if (server.tools.deny.includes(tool)) invalid(`${at}.grants.mcpServers[${j}].tools[${k}]`, `tool "${tool}" is on server ${id}'s deny list`);
        if (server.tools.allow && !server.tools.allow.includes(tool)) invalid(`${at}.grants.mcpServers[${j}].tools[${k}]`, `tool "${tool}" is not on server ${id}'s allow list`);
      });
    });
    for (const field of ['modelCostPerRunUsd', 'modelCostPerDayUsd'] as const) {
      if (b.limits[field] === undefined) continue;
      const unpriced = b.grants.models.filter((id) => !(known.models.get(id) as { pricing?: unknown } | undefined)?.pricing);
      if (unpriced.length > 0) invalid(`${at}.limits.${field}`, `a cost budget needs pricing on every granted model; ${unpriced.join(', ')} ha${unpriced.length > 1 ? 've' : 's'} none`);
    }
    b.readPaths.forEach((path, j) => {
      if (!insideRoots(path, context.mountRoots)) invalid(`${at}.readPaths[${j}]`, `${path} is not an existing path under an allowed mount root (${context.mountRoots.join(', ') || 'none configured: PADDOCK_MOUNT_ROOTS'})`);
    });
    if (b.workspace === 'mount' && b.grants.mounts.length === 0) invalid(`${at}.workspace`, 'workspace "mount" needs at least one granted mount (grants.mounts)');
  });

  const enabled = file.bindings.map((b, i) => ({ b, i })).filter(({ b }) => b.enabled);
  // Reported at the earlier binding: the file's own objects come before the stored ones it keeps.
  for (const [n, { b }] of enabled.entries()) {
    for (const { b: other, i } of enabled.slice(0, n)) {
      if (routeKey(b.route) === routeKey(other.route) && routesOverlap(b.route, other.route)) {
        invalid(`bindings[${i}].route`, `binding "${other.id}" has the same route as "${b.id}"; one event could not choose between them`);
      }
    }
  }
  return file;
}

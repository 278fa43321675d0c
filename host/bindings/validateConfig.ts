import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import type { z } from 'zod';
import { HostError } from '../errors.js';
import { findRunner, runnerIdOf, type RunnerCatalog } from '../plugins/catalog.js';
import { validateRunnerConfig } from '../plugins/configSchema.js';
import { fieldPath } from '../util/fieldPath.js';
import { insideRoots } from '../util/insideRoots.js';
import { describeIssue } from './configIssues.js';
import { findInlineSecrets, findString } from '../secrets/inlineSecrets.js';
import { registerConfigSecrets } from '../secrets/hostSecrets.js';
import type { Redactor } from '../secrets/redactor.js';
import { routeKey, routesOverlap } from './routing.js';
import { didYouMean, SuggestBudget } from '../util/didYouMean.js';
import { ConfigFileSchema, type Binding, type ConfigFile, type Resources } from './schema.js';
import { CONFIG_KINDS } from '../state/configRepo.js';
import { DEFAULT_TENANT } from '../config/tenant.js';

/** What validation checks references and paths against. */
export interface ValidationContext {
  catalog: RunnerCatalog;
  /** Host directories under which mounts may lie. */
  mountRoots: readonly string[];
  /** The host's redactor: a config may not contain the value of any secret it knows. */
  redactor?: Redactor;
  /** The file being validated (`paddock.yaml`, `-` for stdin), named in every problem. */
  source?: string;
}

/** One problem of a configuration: where (file, field path) and what is wrong. */
export interface ConfigProblem {
  file?: string;
  field: string;
  message: string;
}

const invalid = (field: string, message: string): never => {
  throw new HostError('CONFIG_INVALID', `${field}: ${message}`, { field });
};

/** Parse with a zod schema; the error names the first bad field. */
export function parseOrExplain<T extends z.ZodType>(schema: T, value: unknown, prefix = ''): z.infer<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = fieldPath([...(prefix ? [prefix] : []), ...issue.path]) || '(root)';
  return invalid(field, issue.message);
}

/** The HostError that reports every problem, one `file: field: message` line each. */
export function configInvalid(problems: readonly ConfigProblem[]): HostError {
  const lines = problems.map((p) => `${p.file ? `${p.file}: ` : ''}${p.field}: ${p.message}`);
  return new HostError('CONFIG_INVALID', lines.join('\n'), { field: problems[0]?.field, problems });
}

/** Parse `paddock.yaml` text (YAML or JSON) into plain data; a syntax error names the line. */
export function parseConfigText(text: string, source: string): unknown {
  // The operator's own file: parsed here. Text from outside goes through parseYamlIsolated (isolatedYaml.ts).
  try {
    return parseYaml(text, { prettyErrors: true }) ?? {};
  } catch (error) {
    const where = error instanceof YAMLParseError && error.linePos ? ` (line ${error.linePos[0].line})` : '';
    throw new HostError(
      'CONFIG_INVALID',
      `${source}${where}: not valid YAML: ${(error as Error).message.split('\n')[0]}`,
      { field: '(root)' },
    );
  }
}

/** At most this many problems are listed (then how many more): a hostile file cannot make the answer huge. */
export const MAX_PROBLEMS = 200;

const RESOURCE_KINDS = ['models', 'knowledgeBases', 'mcpServers', 'skills', 'artifacts', 'mounts'] as const;
const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The parsed file of the items that parsed, with each kept item's index in the original file. */
interface Salvaged {
  file: ConfigFile;
  /** `index.bindings[i]` is the original index of `file.bindings[i]` (and likewise per resource kind). */
  index: Record<keyof Resources | 'bindings', number[]>;
  /** Ids of items that failed to parse, so references to them do not add "no resource" problems. */
  brokenIds: Record<keyof Resources | 'bindings', Set<string>>;
}

/**
 * Parse the file item by item: every structural problem is reported, and the items that parsed
 * are kept so the cross-item checks can still run on them (one bad binding hides nothing else).
 */
function parseSalvaging(
  raw: unknown,
  report: (field: string, message: string) => void,
  budget: SuggestBudget,
): Salvaged | undefined {
  const parsed = ConfigFileSchema.safeParse(raw);
  const broken = new Set<string>();
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      for (const problem of describeIssue(ConfigFileSchema, issue, [], budget))
        report(fieldPath(problem.path), problem.message);
      const [top, second, third] = issue.path;
      if (top === 'bindings' && typeof second === 'number') broken.add(`bindings/${second}`);
      if (top === 'resources' && typeof second === 'string' && typeof third === 'number')
        broken.add(`${second}/${third}`);
    }
  }
  const rawFile = isRecord(raw) ? raw : {};
  const rawResources = isRecord(rawFile.resources) ? rawFile.resources : {};
  const keep = (kind: string, list: unknown) => {
    const items = Array.isArray(list) ? list.map((item: unknown, i) => ({ item, i })) : [];
    const kept = items.filter(({ i }) => !broken.has(`${kind}/${i}`));
    const ids = items
      .filter(({ i }) => broken.has(`${kind}/${i}`))
      .flatMap(({ item }) => (isRecord(item) && typeof item.id === 'string' ? [item.id] : []));
    return { kept, brokenIds: new Set(ids) };
  };
  const parts = Object.fromEntries([
    ...RESOURCE_KINDS.map((k) => [k, keep(k, rawResources[k])] as const),
    ['bindings', keep('bindings', rawFile.bindings)] as const,
  ]);
  const salvaged = ConfigFileSchema.safeParse({
    resources: Object.fromEntries(RESOURCE_KINDS.map((k) => [k, parts[k]!.kept.map((x) => x.item)])),
    bindings: parts.bindings!.kept.map((x) => x.item),
  });
  if (!salvaged.success) return undefined;
  const mapParts = <T>(pick: (p: (typeof parts)[string]) => T) =>
    Object.fromEntries(Object.entries(parts).map(([k, p]) => [k, pick(p!)])) as Record<keyof Resources | 'bindings', T>;
  return {
    file: salvaged.data,
    index: mapParts((p) => p.kept.map((x) => x.i)),
    brokenIds: mapParts((p) => p.brokenIds),
  };
}

/**
 * Validate a whole configuration: no inline secret anywhere, every field well-formed, ids
 * unique, every reference resolvable (in this file, or in `stored` objects the apply keeps),
 * each binding's config valid for its runner, tool grants inside the server's lists, mounts
 * under an allowed root, no two enabled bindings claiming the same route. Throws one
 * `CONFIG_INVALID` listing every problem (file, field path, message; a did-you-mean for an
 * unknown field); returns the parsed file (defaults applied).
 */
export function validateConfig(raw: unknown, context: ValidationContext, stored: Partial<Resources> = {}): ConfigFile {
  const problems: ConfigProblem[] = [];
  // Sets, not a scan of the list per report: a hostile file can make tens of thousands of problems.
  const seen = new Set<string>();
  const secretFields = new Set<string>();
  // Guesses of one validation share a budget: thousands of unknown names cost no more than fifty.
  const budget = new SuggestBudget();
  let unlisted = 0;
  const report = (field: string, message: string) => {
    // A field already reported (an inline secret that is also the wrong shape) is reported once.
    const at = field || '(root)';
    if (secretFields.has(at) || seen.has(`${at}\0${message}`)) return;
    seen.add(`${at}\0${message}`);
    if (message.startsWith('apparent inline secret')) secretFields.add(at);
    if (problems.length >= MAX_PROBLEMS) return void unlisted++;
    problems.push({ ...(context.source ? { file: context.source } : {}), field: at, message });
  };
  const invalid = () =>
    configInvalid(
      unlisted === 0
        ? problems
        : [
            ...problems,
            { field: '(root)', message: `${unlisted} more problems not listed (the first ${MAX_PROBLEMS} are)` },
          ],
    );
  for (const secret of findInlineSecrets(raw)) report(secret.field, `apparent inline secret: ${secret.why}`);
  const salvaged = parseSalvaging(raw, report, budget);
  if (!salvaged) throw invalid();
  const { file, index, brokenIds } = salvaged;
  if (context.redactor) {
    const redactor = context.redactor;
    registerConfigSecrets(redactor, file.resources);
    const field = findString(raw, (text) => redactor.text(text) !== text);
    if (field)
      report(
        field,
        'holds the value of a secret the host knows (a key the configuration references, or a credential in ' +
          'its environment); reference it with { env: NAME } or { file: /path }',
      );
  }

  const known: Record<keyof Resources, Map<string, unknown>> = {} as never;
  for (const kind of Object.keys(file.resources) as (keyof Resources)[]) {
    const ids = new Map<string, unknown>();
    for (const item of stored[kind] ?? []) ids.set((item as { id: string }).id, item);
    for (const id of brokenIds[kind]) ids.set(id, undefined);
    const inFile = new Set<string>();
    file.resources[kind].forEach((item, i) => {
      if (inFile.has(item.id)) report(`resources.${kind}[${index[kind][i]}].id`, `duplicate id "${item.id}"`);
      inFile.add(item.id);
      ids.set(item.id, item);
    });
    known[kind] = ids;
  }
  file.resources.mounts.forEach((m, i) => {
    const at = `resources.mounts[${index.mounts[i]}].path`;
    if (context.mountRoots.length === 0)
      report(at, 'no mount roots are configured (PADDOCK_MOUNT_ROOTS); mounts are refused');
    else if (!existsSync(m.path) || !statSync(m.path).isDirectory()) report(at, `${m.path} is not a directory`);
    else if (!insideRoots(m.path, context.mountRoots))
      report(at, `${m.path} is not under an allowed mount root (${context.mountRoots.join(', ')})`);
  });
  for (const [kind, wantDir] of [
    ['skills', true],
    ['artifacts', false],
  ] as const) {
    file.resources[kind].forEach((r, i) => {
      const at = `resources.${kind}[${index[kind][i]}].path`;
      const ok = existsSync(r.path) && (wantDir ? statSync(r.path).isDirectory() : statSync(r.path).isFile());
      if (!ok) report(at, `${r.path} is not ${wantDir ? 'a directory' : 'a file'}`);
      else if (wantDir && !existsSync(join(r.path, 'SKILL.md'))) report(at, `${r.path} has no SKILL.md`);
    });
  }
  file.resources.knowledgeBases.forEach((k, i) => {
    if (k.path && !(existsSync(k.path) && statSync(k.path).isDirectory()))
      report(`resources.knowledgeBases[${index.knowledgeBases[i]}].path`, `${k.path} is not a directory`);
  });

  // A binding grants only resources of its own tenant. A resource that failed to parse (undefined here) has its
  // own problem reported already.
  const crossTenant = (field: string, kind: keyof Resources, id: string, tenant: string) => {
    const resource = known[kind].get(id) as { tenant?: string } | undefined;
    if (!resource) return;
    const owner = resource.tenant ?? DEFAULT_TENANT;
    if (owner !== tenant)
      report(field, `${CONFIG_KINDS[kind]} "${id}" belongs to tenant "${owner}", this binding to tenant "${tenant}"`);
  };
  const bindingIds = new Set<string>(brokenIds.bindings);
  file.bindings.forEach((b, i) => {
    const at = `bindings[${index.bindings[i]}]`;
    if (bindingIds.has(b.id)) report(`${at}.id`, `duplicate id "${b.id}"`);
    bindingIds.add(b.id);
    const runner = findRunner(context.catalog, b.runner);
    if (!runner) {
      const broken = context.catalog.problems.find((p) => p.file.includes(`/${runnerIdOf(b.runner)}`));
      const guess = didYouMean(b.runner, context.catalog.runners.keys(), budget);
      report(
        `${at}.runner`,
        broken
          ? `runner "${b.runner}" has a broken manifest: ${broken.message}`
          : `no runner "${b.runner}"${guess ? `; did you mean "${guess}"?` : ''} (see paddock runners list)`,
      );
    } else {
      const checked = validateRunnerConfig(runner.manifest.configSchema, b.config, budget);
      if (!checked.ok)
        for (const p of checked.problems) report(`${at}.config${p.field ? `.${p.field}` : ''}`, p.message);
    }
    for (const kind of ['models', 'knowledgeBases', 'skills', 'artifacts', 'mounts'] as const) {
      b.grants[kind].forEach((id, j) => {
        if (!known[kind].has(id))
          report(`${at}.grants.${kind}[${j}]`, `no ${kind} resource "${id}"${suggestId(id, known[kind], budget)}`);
        else crossTenant(`${at}.grants.${kind}[${j}]`, kind, id, b.tenant);
      });
    }
    b.grants.mcpServers.forEach((grant, j) => {
      const id = typeof grant === 'string' ? grant : grant.id;
      if (!known.mcpServers.has(id))
        return report(
          `${at}.grants.mcpServers[${j}]`,
          `no mcpServers resource "${id}"${suggestId(id, known.mcpServers, budget)}`,
        );
      crossTenant(`${at}.grants.mcpServers[${j}]`, 'mcpServers', id, b.tenant);
      const server = known.mcpServers.get(id) as { tools: { allow?: string[]; deny: string[] } } | undefined;
      if (typeof grant === 'string' || !server) return;
      grant.tools?.forEach((tool, k) => {
        if (server.tools.deny.includes(tool))
          report(`${at}.grants.mcpServers[${j}].tools[${k}]`, `tool "${tool}" is on server ${id}'s deny list`);
        else if (server.tools.allow && !server.tools.allow.includes(tool))
          report(`${at}.grants.mcpServers[${j}].tools[${k}]`, `tool "${tool}" is not on server ${id}'s allow list`);
      });
    });
    for (const field of ['modelCostPerRunUsd', 'modelCostPerDayUsd'] as const) {
      if (b.limits[field] === undefined) continue;
      const unpriced = b.grants.models.filter(
        (id) => known.models.get(id) !== undefined && !(known.models.get(id) as { pricing?: unknown }).pricing,
      );
      if (unpriced.length > 0)
        report(
          `${at}.limits.${field}`,
          `a cost budget needs pricing on every granted model; ${unpriced.join(', ')} ha` +
            `${unpriced.length > 1 ? 've' : 's'} none`,
        );
    }
    b.readPaths.forEach((path, j) => {
      if (!insideRoots(path, context.mountRoots))
        report(
          `${at}.readPaths[${j}]`,
          `${path} is not an existing path under an allowed mount root (` +
            `${context.mountRoots.join(', ') || 'none configured: PADDOCK_MOUNT_ROOTS'})`,
        );
    });
    if (b.workspace === 'mount' && b.grants.mounts.length === 0)
      report(`${at}.workspace`, 'workspace "mount" needs at least one granted mount (grants.mounts)');
  });

  const enabled = file.bindings.map((b, i) => ({ b, i: index.bindings[i]! })).filter(({ b }) => b.enabled);
  // Routing considers one tenant's bindings at a time (two tenants may route the same events): only bindings of one
  // tenant with the same route key can clash, so they are grouped first (linear, whatever the file's size).
  const byRoute = new Map<string, { b: Binding; i: number }[]>();
  for (const entry of enabled) {
    const key = JSON.stringify([entry.b.tenant ?? null, routeKey(entry.b.route)]);
    const earlier = byRoute.get(key) ?? [];
    // Reported at the earlier binding (the file's own objects come before the stored ones it keeps), once per binding.
    const clash = earlier.find(({ b: other }) => routesOverlap(entry.b.route, other.route));
    if (clash)
      report(
        `bindings[${clash.i}].route`,
        `binding "${clash.b.id}" has the same route as "${entry.b.id}"; one event could not choose between them`,
      );
    earlier.push(entry);
    byRoute.set(key, earlier);
  }
  if (problems.length > 0) throw invalid();
  return file;
}

/** `; did you mean "x"?` when a referenced id is a likely typo of a known one. */
function suggestId(id: string, known: Map<string, unknown>, budget: SuggestBudget): string {
  const guess = didYouMean(id, known.keys(), budget);
  return guess ? `; did you mean "${guess}"?` : '';
}

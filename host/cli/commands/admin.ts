import { readFileSync } from 'node:fs';
import { stringify as toYaml } from 'yaml';
import {
  bindingOf,
  cancelActiveRuns,
  explainStoredBinding,
  listBindings,
  setBindingEnabled,
  showBinding,
} from '../../admin/bindings.js';
import { applyAs, exportConfig, listResources, validationContext } from '../../admin/config.js';
import { listRunners } from '../../admin/runners.js';
import { ConfigRepo } from '../../bindings/configRepo.js';
import { renderExplanation } from '../../bindings/explain.js';
import type { Binding } from '../../bindings/schema.js';
import { parseConfigText } from '../../bindings/validateConfig.js';
import type { HostConfig } from '../../config/hostConfig.js';
import { HostError } from '../../errors.js';
import { findRunner, runnerIdOf } from '../../plugins/catalog.js';
import { packageSummaries, type PackageSummary } from '../../admin/runnerPackages.js';
import { openHostStore } from '../../hostStore.js';
import { hostCatalog } from '../../packages/installedRunners.js';
import { renderPermissions } from '../../packages/permissions.js';
import type { Store } from '../../state/store.js';
import { describeRecovery, openHostState } from '../../start.js';
import { terminalSafe } from '../../util/terminalText.js';

type Out = (text: string) => void;

/** Flags the admin commands read. */
export interface AdminFlags {
  json: boolean;
  file?: string;
  prune?: boolean;
  'dry-run'?: boolean;
  'cancel-active'?: boolean;
  by?: string;
}

const actor = (flags: AdminFlags) => (flags.by ? `user:${flags.by}` : `user:${process.env.USER ?? 'operator'}`);

/** `paddock runners list|show`: the catalog, and the installed packages of the store with their state. */
export function runnersCommand(
  config: HostConfig,
  verb: string | undefined,
  id: string | undefined,
  flags: AdminFlags,
  out: Out,
  err: Out,
): number {
  const { store } = openHostStore(config);
  try {
    return listOrShowRunners(config, store, verb, id, flags, out, err);
  } finally {
    store.close();
  }
}

function listOrShowRunners(
  config: HostConfig,
  store: Store,
  verb: string | undefined,
  id: string | undefined,
  flags: AdminFlags,
  out: Out,
  err: Out,
): number {
  const catalog = hostCatalog(config, store);
  // Manifest fields, paths and problems are the package's bytes: each is one line here (a newline in a description
  // must not print a line that looks like the host's own, e.g. a second `risk:`), its controls escaped.
  const one = (text: string) => terminalSafe(text);
  for (const p of catalog.problems)
    err(
      one(
        `broken runner: ${p.file}${p.field ? `: field ${p.field}` : ''}: ` +
          `${p.message.replace(`${p.file}: `, '').replace(`field ${p.field}: `, '')}`,
      ),
    );
  const packages = packageSummaries(store, config, verb === 'show' && id ? runnerIdOf(id) : undefined);
  const packageLine = (p: PackageSummary) =>
    `  ${p.runnerId}@${one(p.version)}${p.newest ? ' (newest)' : ''}  ${p.status === 'ok' ? 'ok' : 'TAMPERED'}  ` +
    `${p.source} ${one(p.spec)}  digest ${p.digest.slice(0, 16)}…  signatures: ${one(p.signatures)}  ` +
    `bindings: ${p.bindings.map((b) => `${b.id}${b.enabled ? '' : ' (disabled)'}`).join(', ') || 'none'}`;
  if (verb === 'list' || verb === undefined) {
    const runners = [...catalog.runners.values()];
    if (flags.json) out(JSON.stringify({ ...listRunners(catalog), packages }));
    else
      out(
        [
          ...runners.map(
            (r) =>
              `${r.manifest.id.padEnd(20)} ${one(r.manifest.version).padEnd(8)} ` +
              `${r.source === 'builtin' ? 'built-in' : one(r.source)}` +
              `${r.package?.status === 'tampered' ? ' TAMPERED' : ''}  ` +
              `${one(r.manifest.description)}`,
          ),
          ...(runners.length === 0 ? ['no runners'] : []),
          ...(packages.length > 0 ? ['installed packages:', ...packages.map(packageLine)] : []),
        ].join('\n'),
      );
    return 0;
  }
  if (verb === 'show' && id) {
    const runner = findRunner(catalog, id);
    if (!runner)
      throw new HostError(
        'NOT_FOUND',
        `no runner "${id}"${catalog.problems.length ? ' (see the broken runners above)' : ''}`,
      );
    const m = runner.manifest;
    const versions = id.includes('@') ? packages.filter((p) => `${p.runnerId}@${p.version}` === id) : packages;
    if (flags.json) out(JSON.stringify({ ...m, dir: runner.dir, source: runner.source, packages: versions }));
    else
      out(
        [
          `${m.id} ${one(m.version)} — ${one(m.name)}`,
          `  ${one(m.description)}`,
          `  folder: ${one(runner.dir)}`,
          `  asks for host requests: ${m.capabilities.hostRequests.join(', ') || 'none'}`,
          `  uses resources: ${m.resources.join(', ') || 'none'}`,
          `  effects it may cause itself: ${m.effects.join(', ') || 'none'}`,
          `  default limits: ${JSON.stringify(m.limits)}`,
          `  config schema: ${JSON.stringify(m.configSchema)}`,
          ...(m.risk ? [`  risk: ${one(m.risk)}`] : []),
          ...(versions.length > 0
            ? [
                'installed versions:',
                ...versions.flatMap((p) => [
                  packageLine(p),
                  `    installed by ${one(p.installedBy)} at ${p.installedAt}; ` +
                    `whole tree last re-hashed ${p.verifiedAt}`,
                  `    digest ${p.digest}${p.integrity ? `; npm integrity ${p.integrity}` : ''}`,
                  ...(p.status === 'tampered' ? [`    changed: ${p.tampered.map(one).join(', ')}`] : []),
                  '    accepted permissions:',
                  ...renderPermissions(p.permissions).map((l) => `    ${l}`),
                ]),
              ]
            : []),
        ].join('\n'),
      );
    return 0;
  }
  throw new HostError('INVALID_INPUT', 'usage: paddock runners list|show <id>');
}

/** `paddock apply|export|bindings …|resources list|explain`: the configuration in the store. */
export async function configCommand(
  config: HostConfig,
  words: string[],
  flags: AdminFlags,
  out: Out,
  err: Out,
): Promise<number> {
  const { store, recovery, redactor } = await openHostState(config);
  try {
    for (const line of describeRecovery(recovery)) err(line);
    const repo = new ConfigRepo(store);
    const context = () => validationContext(config, redactor, store);
    const [noun, verb, id] = words;
    const print = (value: unknown, human: () => string) => out(flags.json ? JSON.stringify(value) : human());

    if (noun === 'apply') {
      if (!flags.file) throw new HostError('INVALID_INPUT', 'apply needs -f <paddock.yaml> (or -f - for stdin)');
      const text = readFileSync(flags.file === '-' ? 0 : flags.file, 'utf8');
      const raw = parseConfigText(text, flags.file);
      const report = applyAs(
        store,
        raw,
        { ...context(), source: flags.file === '-' ? '<stdin>' : flags.file },
        { prune: flags.prune, dryRun: flags['dry-run'], by: actor(flags) },
      );
      const { changes, warnings, missingSecrets } = report;
      if (!flags.json) for (const w of missingSecrets) err(`warning: ${w}`);
      print(report, () =>
        [
          ...changes
            .filter((c) => c.action !== 'unchanged')
            .map((c) => `${flags['dry-run'] ? 'would be ' : ''}${c.action.padEnd(9)} ${c.kind} ${c.id}`),
          ...warnings.map((w) => `warning: binding ${w.binding}: ${w.what} will not reach its runner — ${w.why}`),
          `${changes.filter((c) => c.action !== 'unchanged').length} change(s), ` +
            `${changes.filter((c) => c.action === 'unchanged').length} unchanged` +
            `${flags['dry-run'] ? ' (dry run: nothing written)' : ''}`,
        ].join('\n'),
      );
      return 0;
    }
    if (noun === 'export') {
      const snapshot = exportConfig(store);
      out(flags.json ? JSON.stringify(snapshot) : toYaml(snapshot).trimEnd());
      return 0;
    }
    if (noun === 'resources' && (verb === 'list' || verb === undefined)) {
      const objects = listResources(store);
      print(
        objects,
        () =>
          objects
            .map((o) => `${o.kind.padEnd(14)} ${o.id.padEnd(20)} v${o.version}  ${summarize(o.spec)}`)
            .join('\n') || 'no resources',
      );
      return 0;
    }
    if (noun === 'explain') {
      const bindingId = verb;
      if (!bindingId) throw new HostError('INVALID_INPUT', 'usage: paddock explain <binding>');
      const explanation = explainStoredBinding(store, config, context(), bindingId);
      print(explanation, () => renderExplanation(explanation));
      return 0;
    }
    if (noun === 'bindings') {
      if (verb === 'list' || verb === undefined) {
        const bindings = listBindings(store);
        print(
          bindings,
          () =>
            bindings
              .map(
                (b) =>
                  `${b.id.padEnd(20)} ${(b.spec.enabled ? 'enabled' : 'disabled').padEnd(9)} v` +
                  `${String(b.version).padEnd(4)} ${b.spec.runner.padEnd(16)} ${describeRoute(b.spec)}`,
              )
              .join('\n') || 'no bindings',
        );
        return 0;
      }
      if (!id) throw new HostError('INVALID_INPUT', `usage: paddock bindings ${verb} <binding>`);
      const current = bindingOf(store, id);
      if (verb === 'show') {
        const shown = showBinding(store, id);
        const { history } = shown;
        print(shown, () =>
          [
            `binding ${id} v${current.version} (updated ${current.updatedAt})`,
            toYaml(current.spec).trimEnd(),
            'history:',
            ...history.map((h) => `  v${h.version} ${h.action} by ${h.by} at ${h.at}`),
          ].join('\n'),
        );
        return 0;
      }
      if (verb === 'enable' || verb === 'disable') {
        const enabled = verb === 'enable';
        const done = setBindingEnabled(store, context(), id, enabled, {
          by: actor(flags),
          cancelActive: flags['cancel-active'],
        });
        const { changed, cancelRequested: cancelled } = done;
        print(
          { bindingId: id, enabled, changed, cancelRequested: cancelled },
          () =>
            `binding ${id} ${enabled ? 'enabled' : 'disabled'}${changed ? '' : ' (it already was)'}` +
            `${cancelled ? `; asked ${cancelled} active run(s) to cancel` : ''}`,
        );
        return 0;
      }
      if (verb === 'delete') {
        const cancelled = flags['cancel-active']
          ? cancelActiveRuns(store, id, `binding ${id} was deleted`, actor(flags)).length
          : 0;
        repo.delete('binding', id, actor(flags));
        print(
          { bindingId: id, deleted: true, cancelRequested: cancelled },
          () => `binding ${id} deleted${cancelled ? `; asked ${cancelled} active run(s) to cancel` : ''}`,
        );
        return 0;
      }
    }
    throw new HostError('INVALID_INPUT', `unknown command: paddock ${words.join(' ')}`);
  } finally {
    store.close();
  }
}

function describeRoute(b: Binding): string {
  const r = b.route;
  const parts = [r.platform ?? '*', r.bot ?? '*', r.conversation.type ?? '*', r.conversation.id ?? '*'];
  return `${parts.join('/')} [${r.eventTypes.join(',')}]`;
}

function summarize(spec: unknown): string {
  const s = spec as Record<string, unknown>;
  if ('provider' in s)
    return `${String(s.provider)} ${String(s.model)}${s.apiKey ? ` key from ${JSON.stringify(s.apiKey)}` : ''}`;
  if ('command' in s && s.command) return `command ${String(s.command)}`;
  if ('url' in s && s.url) return `url ${String(s.url)}`;
  if ('mode' in s) return `${String(s.path)} (${String(s.mode)})`;
  if ('path' in s) return String(s.path);
  return s.name ? String(s.name) : '';
}

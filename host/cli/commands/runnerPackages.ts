/** `paddock runners install|update|remove|verify`: installed runner packages (docs/runner-packages.md). */
import { createInterface } from 'node:readline/promises';
import { newestInstalled, removeRunnerPackage, verifyRunnerPackages } from '../../admin/runnerPackages.js';
import type { HostConfig } from '../../config/hostConfig.js';
import { HostError } from '../../errors.js';
import { openHostStore } from '../../hostStore.js';
import { installRunnerPackage, sweepIncoming, type InstallReview } from '../../packages/install.js';
import { renderPermissions } from '../../packages/permissions.js';
import type { Store } from '../../state/store.js';
import { terminalSafe } from '../../util/terminalText.js';
import { progressLine } from '../../util/progress.js';

type Out = (text: string) => void;

/** The flags these commands read. */
export interface PackageFlags {
  json: boolean;
  accept: boolean;
  allowNativeBuild: boolean;
  disableBindings: boolean;
  /** Name each step at once: no quiet first second. */
  progress?: boolean;
  by?: string;
}

const actor = (flags: PackageFlags) => (flags.by ? `user:${flags.by}` : `user:${process.env.USER ?? 'operator'}`);

async function withStore<T>(config: HostConfig, work: (store: Store) => Promise<T> | T): Promise<T> {
  const { store } = openHostStore(config);
  try {
    return await work(store);
  } finally {
    store.close();
  }
}

/** The review as lines: what the package is, where it came from, what it asks for, and an update's diff. */
export function renderReview(r: InstallReview): string[] {
  const one = (t: string) => terminalSafe(t);
  return [
    `${r.runnerId}@${one(r.version)} (npm package ${one(r.packageName)}, from ${r.source} ${one(r.spec)})`,
    `  npm integrity: ${r.integrity ?? 'none (not a registry tarball)'}; registry signatures: ${one(r.signatures)}`,
    ...(r.skippedScripts.length > 0
      ? [`  install scripts NOT run (npm --ignore-scripts): ${r.skippedScripts.map(one).join(', ')}`]
      : []),
    `  starts as: ${one(r.entry)}`,
    '  asks for:',
    ...renderPermissions(r.permissions).map((l) => `  ${l}`),
    ...(r.diff
      ? [
          `  against the installed ${r.runnerId}@${one(r.diff.against)}:`,
          ...(r.diff.widened.length + r.diff.narrowed.length === 0 ? ['    the same permissions'] : []),
          ...r.diff.widened.map((l) => `    ${one(l)}   (widens: needs acceptance)`),
          ...r.diff.narrowed.map((l) => `    ${one(l)}`),
        ]
      : []),
    ...(r.repair ? ['  replaces the installed copy of this version, which was found TAMPERED'] : []),
    ...(r.builtinId
      ? [
          `  a built-in runner is named "${r.runnerId}": bindings naming "${r.runnerId}" keep running it; ` +
            `"${r.runnerId}@${one(r.version)}" runs this package`,
        ]
      : []),
  ];
}

/** Ask on the terminal whether to install (only when stdin and stderr are terminals; else the --accept refusal). */
async function askOnTerminal(review: InstallReview, err: Out): Promise<boolean> {
  if (!process.stdin.isTTY || !process.stderr.isTTY) return false;
  for (const line of renderReview(review)) err(line);
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question('Install it with these permissions? [y/N] ')).trim());
  } finally {
    rl.close();
  }
}

/** `paddock runners install <spec>` and `paddock runners update <id> [spec]`. */
export async function installCommand(
  config: HostConfig,
  verb: 'install' | 'update',
  args: string[],
  flags: PackageFlags,
  out: Out,
  err: Out,
): Promise<number> {
  return withStore(config, async (store) => {
    sweepIncoming(config.dataDir);
    let spec = args[0];
    let updateOf: string | undefined;
    if (verb === 'update') {
      updateOf = args[0]!;
      const newest = newestInstalled(store, updateOf);
      // Without a spec: the registry's latest of the same package, or the same folder or tarball read again.
      spec = args[1] ?? (newest.source === 'registry' ? `${newest.packageName}@latest` : newest.spec);
    }
    // Each step named as it starts (after the first quiet second, or at once with --progress), with the time since
    // the start, rewritten on a terminal and every 5 s to a pipe while a step lasts (an npm fetch can take minutes).
    const line = progressLine(`paddock runners ${verb}`, '', process.stderr, undefined, {
      elapsed: true,
      ...(flags.progress ? { quietMs: 0 } : {}),
    });
    const ticker = setInterval(() => line.tick(), 1000).unref();
    const progress = {
      step: (name: string) => line.phase(name),
      finish: () => {
        clearInterval(ticker);
        line.finish();
      },
    };
    try {
      const result = await installRunnerPackage(store, config, spec!, {
        accept: flags.accept,
        allowNativeBuild: flags.allowNativeBuild,
        by: actor(flags),
        updateOf,
        progress: (s) => progress.step(s),
        confirm: (review) => {
          progress.finish();
          return askOnTerminal(review, err);
        },
      });
      progress.finish();
      if (flags.json) out(JSON.stringify(result));
      else
        out(
          [
            ...renderReview(result.review),
            result.status === 'unchanged'
              ? `${result.review.runnerId}@${result.review.version} is already installed with this digest: ` +
                'nothing changed'
              : `${result.status} ${result.review.runnerId}@${result.review.version} into ${terminalSafe(result.dir)}`,
            `  tree digest: ${result.digest}`,
          ].join('\n'),
        );
      return 0;
    } catch (error) {
      progress.finish();
      if (error instanceof HostError && error.data.reason === 'not_accepted' && !flags.json)
        for (const line of renderReview(error.data.review as InstallReview)) err(line);
      throw error;
    }
  });
}

/** `paddock runners remove <id>[@version] [--disable-bindings]`. */
export async function removeCommand(config: HostConfig, ref: string, flags: PackageFlags, out: Out): Promise<number> {
  return withStore(config, (store) => {
    const report = removeRunnerPackage(store, config, ref, {
      by: actor(flags),
      disableBindings: flags.disableBindings,
    });
    if (flags.json) out(JSON.stringify(report));
    else
      out(
        [
          ...report.disabledBindings.map((b) => `disabled binding ${b}`),
          `removed ${report.runner}@${terminalSafe(report.version)}`,
        ].join('\n'),
      );
    return 0;
  });
}

/** `paddock runners verify [<id>[@version]]`: exit 0 when every version checked is as installed, 1 otherwise. */
export async function verifyCommand(
  config: HostConfig,
  ref: string | undefined,
  flags: PackageFlags,
  out: Out,
): Promise<number> {
  return withStore(config, (store) => {
    const results = verifyRunnerPackages(store, config, ref, actor(flags));
    if (flags.json) out(JSON.stringify(results));
    else
      out(
        results
          .map((r) =>
            r.ok
              ? `${r.runner}@${terminalSafe(r.version)}: as installed (${r.rehashed} files re-hashed)`
              : `${r.runner}@${terminalSafe(r.version)}: TAMPERED — changed: ` +
                r.changed.map((p) => terminalSafe(p)).join(', '),
          )
          .join('\n') || 'no runner packages are installed',
      );
    return results.every((r) => r.ok) ? 0 : 1;
  });
}

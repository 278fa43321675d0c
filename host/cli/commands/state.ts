import { terminalSafe } from '../../util/terminalText.js';
import type { HostConfig } from '../../config/hostConfig.js';
import { HostError } from '../../errors.js';
import { resolveRun } from '../../recovery/reconcile.js';
import { describeRecovery, openHostState } from '../../start.js';
import { describeUsage } from '../render.js';
import type { RunOutcome } from '../../process/outcome.js';
import type { EventData, StoredEvent } from '../../state/events.js';

type Out = (text: string) => void;

/**
 * One event of `paddock runs show`: its data clipped on one line, except a file change (its path, then its diff or why
 * there is none, indented) and the comparison's summary, which an admin reads whole. Terminal-safe: a runner chose
 * the path and the text.
 */
function describeEvent(e: StoredEvent): string {
  if (e.type === 'file.changed') {
    const c = e.data as EventData<'file.changed'>;
    const head = `  ${e.seq} file.changed ${terminalSafe(c.path)} ${c.change} (${c.via})`;
    const sizes = `${c.before ? c.before.size : '-'} → ${c.after ? c.after.size : '-'} bytes`;
    if (c.diff === undefined) return `${head}: ${sizes}${c.notDiffed ? `, ${c.notDiffed}` : ''}`;
    const body = terminalSafe(c.diff, true).replace(/\n$/, '').split('\n');
    return [head + (c.diffTruncated ? ' (diff truncated)' : ''), ...body.map((l) => `      ${l}`)].join('\n');
  }
  if (e.type === 'workspace.compared') {
    const c = e.data as EventData<'workspace.compared'>;
    const summary = c.summary ? `: ${c.summary}` : '';
    return `  ${e.seq} workspace.compared ${c.changed} changed, ${c.recorded} recorded${summary}`;
  }
  return `  ${e.seq} ${e.type} ${JSON.stringify(e.data).slice(0, 160)}`;
}

/** `paddock runs list|show|resolve` and `paddock sessions show`. Returns the exit code. */
export async function stateCommand(
  config: HostConfig,
  words: string[],
  flags: { json: boolean; status?: string; as?: string; by?: string },
  out: Out,
  err: Out,
): Promise<number> {
  const { store, recovery } = await openHostState(config);
  try {
    for (const line of describeRecovery(recovery)) err(line);
    const [noun, verb, id] = words;
    const print = (value: unknown, human: () => string) => out(flags.json ? JSON.stringify(value) : human());
    if (noun === 'runs' && verb === 'list') {
      const runs = store.runs({ status: flags.status ? flags.status.split(',') : undefined });
      print(runs, () =>
        runs.length === 0
          ? 'no runs'
          : runs
              .map((r) => `${r.id}  ${r.status.padEnd(14)} ${r.runnerId.padEnd(12)} ${r.queuedAt}  ${r.reason ?? ''}`)
              .join('\n'),
      );
      return 0;
    }
    if (noun === 'runs' && verb === 'show' && id) {
      const run = store.run(id);
      if (!run) throw new HostError('NOT_FOUND', `no run ${id}`);
      const events = store.readEvents(run.sessionId).filter((e) => e.runId === id);
      print({ run, events }, () =>
        [
          `${run.id} ${run.status}: ${run.reason ?? ''}`,
          `session ${run.sessionId} · runner ${run.runnerId} · pid ${run.pid ?? '-'}`,
          ...(run.usage ? [describeUsage(run.usage as NonNullable<RunOutcome['usage']>)] : []),
          ...events.map((e) => describeEvent(e)),
        ].join('\n'),
      );
      return 0;
    }
    if (noun === 'runs' && verb === 'resolve' && id) {
      if (flags.as !== 'succeeded' && flags.as !== 'failed')
        throw new HostError('INVALID_INPUT', 'runs resolve needs --as succeeded|failed');
      const result = resolveRun(store, id, flags.as, flags.by ?? process.env.USER ?? 'operator');
      print(
        result,
        () =>
          `resolved ${result.resolved.length} effect(s) of ${id} as ` +
          `${flags.as}${result.resumed ? '; session resumed' : ''}`,
      );
      return 0;
    }
    if (noun === 'sessions' && verb === 'show' && id) {
      const view = store.session(id);
      print(view, () =>
        [
          `session ${view.sessionId} · binding ${view.bindingId} · ${view.maxSeq} events` +
            `${view.paused ? ` · PAUSED: ${view.paused.reason}` : ''}`,
          ...view.transcript.map(
            (t) => `${t.role === 'user' ? 'user     ' : 'assistant'} │ ${terminalSafe(t.text, true)}`,
          ),
          ...(view.external ? [`external: ${JSON.stringify(view.external)}`] : []),
          ...view.openEffects.map(
            (e) => `open effect ${e.effectId} (${e.kind} ${e.target}): ${e.status ?? 'no result'}`,
          ),
        ].join('\n'),
      );
      return 0;
    }
    throw new HostError('INVALID_INPUT', `unknown command: ${words.join(' ')}`);
  } finally {
    store.close();
  }
}

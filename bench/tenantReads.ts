// Reads one tenant's action made cost every tenant (third outside attack of issue 13, F2/F3/F5): the synchronous
// stall, in ms, of planning another tenant's event, of one audit export page of deletions, and of finding a run's end
// at a stream opening, at a given size. In-process (the stall is the event loop's, whichever request triggers it).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyConfig } from '../host/bindings/apply.js';
import { parseLimits } from '../host/config/limits.js';
import { exportAudit } from '../host/ops/auditExport.js';
import { discoverRunners } from '../host/plugins/catalog.js';
import { planRun } from '../host/runs/plan.js';
import { Redactor } from '../host/secrets/redactor.js';
import { ConfigRepo } from '../host/state/configRepo.js';
import { dbOf, Store } from '../host/state/store.js';
import { terminalSeqOfRun } from '../host/state/streamReads.js';
import { fmt, summarize } from './stats.js';

/** The median of `n` timed calls of `fn`, in ms. */
function median(fn: () => unknown, n: number): number {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    fn();
    times.push(performance.now() - t);
  }
  return summarize(times).median;
}

/** Stalls with `bindings` bindings of another tenant created and deleted, and a run of `events` × 3 KB events. */
export async function tenantReadsBench(bindings = 5000, events = 11_500): Promise<Record<string, number>> {
  console.log(
    `\n## One tenant's data, another tenant's stall (${bindings} bindings, a run of ${events} × 3 KB events)`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-tenant-reads-'));
  const store = Store.open({ dataDir: dir });
  const repo = new ConfigRepo(store);
  const runnerDirs = [join(import.meta.dirname, '..', 'test/fixtures/runnerDirs')];
  const redactor = new Redactor();
  const config = { dataDir: dir, limits: parseLimits({}), runnerDirs, logLevel: 'silent' as const, mountRoots: [] };
  const context = { catalog: discoverRunners(runnerDirs), mountRoots: [], redactor };
  applyConfig(store, { bindings: [{ id: 'd', runner: 'echo', route: { bot: 'd' }, sandbox: 'process' }] }, context, {
    by: 'bench',
  });
  const event = {
    id: 'e',
    type: 'message',
    platform: 'p',
    bot: 'd',
    conversation: { type: 'dm', id: 'c' },
    user: { id: 'u' },
    text: 'hi',
  };
  const plan = () =>
    planRun(
      { config: config as never, store, redactor },
      { kind: 'dispatch', tenant: 'default', event: event as never },
    );
  const planAlone = median(plan, 9);
  const spec = (id: string) => ({ id, runner: 'echo', route: { bot: id }, tenant: 'other', config: {}, enabled: true });
  store.transaction(() => {
    for (let i = 0; i < bindings; i++) repo.put('binding', `o-${i}`, spec(`o-${i}`), 'bench');
  });
  const planWithOther = median(plan, 9);
  const first = dbOf(store).prepare('SELECT max(seq) FROM audit').pluck().get() as number;
  store.transaction(() => {
    for (let i = 0; i < bindings; i++) repo.delete('binding', `o-${i}`, 'bench');
  });
  const exportPage = median(() => exportAudit(store, 'default', { after: first, limit: 1000, scan: 10_000 }), 3);
  const { sessionId } = store.ensureSession('default', 'd', 'big');
  const text = 'x'.repeat(3000);
  for (let i = 0; i < events; i += 500)
    store.transaction(() => {
      for (let j = i; j < Math.min(events, i + 500); j++)
        store.append(sessionId, [
          { type: 'run.update', runId: 'run_big', data: { runnerSeq: j + 1, update: { kind: 'message.delta', text } } },
        ]);
    });
  const runEnd = median(() => terminalSeqOfRun(store, 'run_big'), 9);
  store.close();
  rmSync(dir, { recursive: true, force: true });
  console.log(
    `plan default's event, alone: ${fmt(planAlone)} ms; with ${bindings} bindings of other: ${fmt(planWithOther)} ms`,
  );
  console.log(`audit export page over ${bindings} deletions (default's admin): ${fmt(exportPage)} ms`);
  console.log(`run stream opening, finding the end of a ${events}-event run: ${fmt(runEnd)} ms`);
  return { planAlone, planWithOther, exportPage, runEnd };
}

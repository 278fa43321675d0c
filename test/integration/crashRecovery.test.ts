import { mkdtempSync } from 'node:fs';
import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { execa } from 'execa';
import { beforeAll, describe, expect, it } from 'vitest';
import { auditKeyPaths } from '../../host/audit/auditKey.js';
import { verifyAudit } from '../../host/audit/verify.js';
import { compileNodeEntry } from '../../host/plugins/compileEntry.js';
import { processStartTime } from '../../sdk/process/procTable.js';
import { repoPath } from '../helpers/fixtures.js';

// Crash-point injection with a real host process: PADDOCK_TEST_CRASH_AT makes the host SIGKILL
// itself right after the N-th committed event (event:N) or between the intent and the act of
// its N-th host-side effect (effect:N). For every boundary of a scripted session we check the
// raw database before a restart, then restart the host and check that it recovers and converges.

let cli = '';
beforeAll(async () => {
  cli = await compileNodeEntry(repoPath('host/cli/entry.ts'));
});

function host(dataDir: string, args: string[], crashAt?: string) {
  return execa(process.execPath, [cli, ...args, '--data-dir', dataDir, '--json'], {
    reject: false,
    cwd: repoPath('.'),
    env: { PATH: process.env.PATH!, ...(crashAt ? { PADDOCK_TEST_CRASH_AT: crashAt } : {}) },
  });
}

const TEXT = 'alpha beta gamma';
const run = (dataDir: string, crashAt?: string) => host(dataDir, ['run', '--runner', 'echo', '--text', TEXT], crashAt);

interface EventRow {
  session_id: string;
  seq: number;
  type: string;
  run_id: string | null;
  data: string;
}

function readDb(dataDir: string) {
  const db = new Database(join(dataDir, 'paddock.db'), { readonly: true });
  try {
    const events = db.prepare('SELECT session_id, seq, type, run_id, data FROM events ORDER BY session_id, seq').all() as EventRow[];
    const runs = db.prepare('SELECT id, status, pid, pid_start FROM runs').all() as { id: string; status: string; pid: number | null; pid_start: number | null }[];
    const audit = verifyAudit(db, createPublicKey(readFileSync(auditKeyPaths(dataDir).publicPath)));
    return { events, runs, audit };
  } finally {
    db.close();
  }
}

/** Invariants that must hold on any committed state, crashed or not. */
function checkLog(events: EventRow[]): void {
  const bySession = new Map<string, number[]>();
  for (const e of events) bySession.set(e.session_id, [...(bySession.get(e.session_id) ?? []), e.seq]);
  for (const seqs of bySession.values()) expect(seqs).toEqual(seqs.map((_, i) => i + 1)); // gap-free, no duplicate
  // No effect is ever performed twice: one intent per (run, kind).
  const intents = events.filter((e) => e.type === 'effect.intent').map((e) => `${e.run_id}:${(JSON.parse(e.data) as { kind: string }).kind}`);
  expect(new Set(intents).size).toBe(intents.length);
}

/** Number of events a clean first run writes (measured, so the boundaries follow the code). */
let eventsPerFirstRun = 0;
let eventsPerLaterRun = 0;

describe('crash-point injection with a real host process', () => {
  it('measures the boundaries of a clean session', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'paddock-crash-clean-'));
    expect((await run(dataDir)).exitCode).toBe(0);
    eventsPerFirstRun = readDb(dataDir).events.length;
    expect((await run(dataDir)).exitCode).toBe(0);
    eventsPerLaterRun = readDb(dataDir).events.length - eventsPerFirstRun;
    expect(eventsPerFirstRun).toBeGreaterThanOrEqual(12);
    expect(eventsPerLaterRun).toBe(eventsPerFirstRun - 1); // no session.created
  });

  // Kill points: every event boundary of a first run, of a second run in the same session, and
  // of the recovery itself (a host killed while recovering), plus each effect's intent/act gap.
  const points = () => [
    ...Array.from({ length: eventsPerFirstRun }, (_, i) => ({ name: `first run, event ${i + 1}`, prior: 0, crashAt: `event:${i + 1}` })),
    ...Array.from({ length: eventsPerLaterRun }, (_, i) => ({ name: `second run, event ${i + 1}`, prior: 1, crashAt: `event:${i + 1}` })),
    { name: 'first run, between workspace.create intent and mkdir', prior: 0, crashAt: 'effect:1' },
    { name: 'first run, between workspace.remove intent and rm', prior: 0, crashAt: 'effect:2' },
    { name: 'second run, between workspace.create intent and mkdir', prior: 1, crashAt: 'effect:1' },
    { name: 'second run, between workspace.remove intent and rm', prior: 1, crashAt: 'effect:2' },
  ];

  it('at every boundary: nothing committed is lost, no seq duplicated, no effect re-run, interruption reported, session converges', async () => {
    const all = points();
    expect(all.length).toBeGreaterThan(25);
    const failures: string[] = [];
    const check = async (p: (typeof all)[number]) => {
      const dataDir = mkdtempSync(join(tmpdir(), 'paddock-crash-'));
      for (let i = 0; i < p.prior; i++) expect((await run(dataDir)).exitCode).toBe(0);
      const before = p.prior > 0 ? readDb(dataDir).events.length : 0;
      const crashed = await run(dataDir, p.crashAt);
      expect(crashed.signal, `${p.name}: the host should have killed itself`).toBe('SIGKILL');
      const afterCrash = readDb(dataDir);
      // Nothing committed is lost: the crash came right after the commit holding the N-th event
      // (a transaction may hold several), and every update the host streamed to its client is stored.
      if (p.crashAt.startsWith('event:')) expect(afterCrash.events.length - before).toBeGreaterThanOrEqual(Number(p.crashAt.slice(6)));
      const streamed = crashed.stdout.split('\n').filter((l) => l.includes('"type":"update"')).length;
      expect(afterCrash.events.filter((e) => e.type === 'run.update').length).toBeGreaterThanOrEqual(streamed + p.prior * 4);
      checkLog(afterCrash.events);
      expect(afterCrash.audit.ok, JSON.stringify(afterCrash.audit)).toBe(true);
      const orphan = afterCrash.runs.find((r) => r.status === 'running' && r.pid !== null && processStartTime(r.pid) === r.pid_start);

      // Restart: the next run recovers first, then must complete in the same session.
      const resumed = await run(dataDir);
      expect(resumed.exitCode, `${p.name}: ${resumed.stderr}\n${resumed.stdout.slice(-500)}`).toBe(0);
      const after = readDb(dataDir);
      checkLog(after.events);
      expect(after.audit.ok, JSON.stringify(after.audit)).toBe(true);
      expect(after.runs.filter((r) => r.status === 'queued' || r.status === 'running')).toEqual([]);
      if (orphan) expect(processStartTime(orphan.pid!)).toBeNull(); // the runner that outlived the host was killed
      const interrupted = after.runs.filter((r) => r.status === 'interrupted').map((r) => r.id);
      const crashedRun = afterCrash.runs.find((r) => r.status === 'queued' || r.status === 'running');
      if (crashedRun) {
        expect(interrupted).toContain(crashedRun.id);
        // The next run was told about the interruption, exactly once.
        const started = after.events.filter((e) => e.type === 'run.started' && (JSON.parse(e.data) as { recoveryDelivered: string | null }).recoveryDelivered === crashedRun.id);
        expect(started).toHaveLength(1);
      }
      // Every effect intent has exactly one decision (result or reconciliation): none is open or decided twice.
      for (const intent of after.events.filter((e) => e.type === 'effect.intent')) {
        const id = (JSON.parse(intent.data) as { effectId: string }).effectId;
        const decisions = after.events.filter((e) => ['effect.result', 'effect.reconciled'].includes(e.type) && (JSON.parse(e.data) as { effectId: string }).effectId === id);
        expect(decisions, `${p.name}: decisions of ${id}`).toHaveLength(1);
      }
      expect(after.events.some((e) => e.type === 'session.paused')).toBe(false); // workspace effects are always decidable
    };
    // Two kill points at a time: each is a separate data folder and host process.
    for (let i = 0; i < all.length; i += 2) {
      await Promise.all(
        all.slice(i, i + 2).map((p) =>
          check(p).catch((error: unknown) => {
            failures.push(`${p.name}: ${(error as Error).message}`);
          }),
        ),
      );
    }
    expect(failures).toEqual([]);
  }, 600_000);
});

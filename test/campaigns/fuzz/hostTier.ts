// The end-to-end tier: a case through the whole host (plan, journal, provision with the process backend's cgroup
// and disk quota, supervise, record, release), then the run as the store recorded it.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HostConfig } from '../../../host/config/hostConfig.js';
import { configureContainer } from '../../../host/di/configure.js';
import { TOKENS } from '../../../host/di/tokens.js';
import type { RunOutcome } from '../../../host/process/outcome.js';
import type { Store } from '../../../host/state/store.js';
import { isAlive } from '../../helpers/fixtures.js';
import type { FuzzCase } from './cases.js';
import type { RecordedRun } from './check.js';
import { FUZZ_LIMITS } from './limits.js';
import { bridgeCommand } from './bridge.js';
import type { PlayLog } from './player.js';
import type { RemotePlayer } from './remotePlayer.js';

/** A host in this process over a fresh data folder, with one fuzz runner (`fuzz-<i>`) per lane. */
export function fuzzHost(root: string, lanes: number, player: RemotePlayer, bridge: string) {
  const runnerDir = join(root, 'runners');
  const sockets = Array.from({ length: lanes }, (_, i) => {
    const dir = join(runnerDir, `fuzz-${i}`);
    mkdirSync(dir, { recursive: true });
    const socketPath = join(root, `host-${i}.sock`);
    const entry = bridgeCommand(bridge, socketPath);
    const manifest = { id: `fuzz-${i}`, name: 'Fuzz', version: '0.0.0', protocolVersion: 1, entry };
    writeFileSync(join(dir, 'runner.json'), JSON.stringify(manifest));
    return socketPath;
  });
  const config: HostConfig = {
    dataDir: join(root, 'data'),
    limits: FUZZ_LIMITS,
    runnerDirs: [runnerDir],
    logLevel: 'silent',
    keepWorkspaces: false,
  };
  const container = configureContainer(config);
  return {
    player,
    sockets,
    store: container.resolve(TOKENS.Store),
    runs: container.resolve(TOKENS.RunService),
    gateway: container.resolve(TOKENS.Gateway),
  };
}

/** What {@link fuzzHost} returns. */
export type FuzzHost = ReturnType<typeof fuzzHost>;

/** One lane of the end-to-end tier: its runner (`fuzz-<i>`), its session, the events read so far. */
export class HostLane {
  private eventsSeen = 0;
  private sessionId: string | undefined;

  constructor(
    private readonly host: FuzzHost,
    private readonly index: number,
  ) {}

  /** Play `fuzz` as an ad-hoc run of the lane's runner; the outcome and what the store recorded of it. */
  async play(
    fuzz: FuzzCase,
  ): Promise<{ outcome: RunOutcome; log: PlayLog; runnerAlive: boolean; recorded: RecordedRun }> {
    const socketPath = this.host.sockets[this.index]!;
    await this.host.player.arm(socketPath, fuzz.seed);
    let runId = '';
    const outcome = await this.host.runs.runAdHoc({
      runner: `fuzz-${this.index}`,
      sandbox: 'process',
      event: {
        id: `fuzz-${fuzz.seed}-${this.index}`,
        platform: 'fuzz',
        bot: 'fuzz',
        conversation: { type: 'private', id: `lane-${this.index}` },
        sender: { id: 'fuzzer' },
        message: { parts: [{ type: 'text', text: `case ${fuzz.seed}` }] },
        receivedAt: new Date().toISOString(),
      },
      onStart: (info) => {
        runId = info.runId;
        this.sessionId = info.sessionId;
      },
    });
    runId ||= outcome.runId;
    const runnerAlive = outcome.pid !== null && isAlive(outcome.pid);
    return {
      outcome,
      log: await this.host.player.collect(socketPath),
      runnerAlive,
      recorded: { row: this.host.store.run(runId), endedEvents: this.endedEvents(runId) },
    };
  }

  /** `run.ended` events of `runId` among the session's events not read yet. */
  private endedEvents(runId: string): number {
    if (!this.sessionId) return 0;
    let ended = 0;
    for (const e of this.host.store.readEvents(this.sessionId, this.eventsSeen)) {
      this.eventsSeen = e.seq;
      if (e.type === 'run.ended' && e.runId === runId) ended += 1;
    }
    return ended;
  }
}

/** Runs the store still shows as not ended (queued or running), for the end-of-campaign check. */
export function unfinishedRuns(store: Store): string[] {
  return store.runs({ status: ['queued', 'running'], limit: 1000 }).map((r) => `${r.id} (${r.status})`);
}

// The fast tier: a case through the host's whole runner boundary (`superviseRun`: spawn, framing, validation, host
// requests, limits, the shutdown ladder) with a real runner process, without the store and provisioning around it.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { RunOutcome } from '../../../host/process/outcome.js';
import { superviseRun } from '../../../host/runs/superviseRun.js';
import { buildRunParams, newRunId, textEvent } from '../../../sdk/protocol/runParams.js';
import { isAlive } from '../../helpers/fixtures.js';
import type { FuzzCase } from './cases.js';
import { FUZZ_LIMITS } from './limits.js';
import { bridgeCommand } from './bridge.js';
import type { PlayLog } from './player.js';
import type { RemotePlayer } from './remotePlayer.js';

/** One lane of the fast tier: its own player socket; cases run one after another. */
export class BoundaryLane {
  private readonly dir: string;
  private readonly socketPath: string;

  constructor(
    root: string,
    name: string,
    private readonly player: RemotePlayer,
    private readonly bridge: string,
  ) {
    this.dir = join(root, name);
    mkdirSync(this.dir, { recursive: true });
    this.socketPath = join(root, `${name}.sock`);
  }

  /** Play `fuzz` through superviseRun; the outcome, what the runner saw, and whether its process is gone. */
  async play(fuzz: FuzzCase): Promise<{ outcome: RunOutcome; log: PlayLog; runnerAlive: boolean }> {
    await this.player.arm(this.socketPath, fuzz.seed);
    const runId = newRunId();
    const outcome = await superviseRun({
      launch: {
        ...bridgeCommand(this.bridge, this.socketPath),
        cwd: this.dir,
        env: { PATH: '/usr/bin:/bin', PADDOCK_RUN_ID: runId },
      },
      params: buildRunParams({
        runId,
        sessionId: 'ses_fuzz',
        event: textEvent('fuzz'),
        binding: { bindingId: 'b_fuzz', runner: { id: 'fuzz' }, config: {}, hostRequests: [] },
        wallClockMs: FUZZ_LIMITS.wallClockMs,
      }),
      limits: FUZZ_LIMITS,
      host: { name: 'paddock-fuzz', version: '0.0.0' },
    });
    const runnerAlive = outcome.pid !== null && isAlive(outcome.pid);
    return { outcome, log: await this.player.collect(this.socketPath), runnerAlive };
  }
}

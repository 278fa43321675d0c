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
import { bridgeCommand, FuzzPlayer, type PlayLog } from './player.js';

/** One lane of the fast tier: its own player socket; cases run one after another. */
export class BoundaryLane {
  readonly player: FuzzPlayer;
  private readonly dir: string;

  constructor(root: string, name: string) {
    this.dir = join(root, name);
    mkdirSync(this.dir, { recursive: true });
    this.player = new FuzzPlayer(join(root, `${name}.sock`));
  }

  /** Play `fuzz` through superviseRun; the outcome, what the runner saw, and whether its process is gone. */
  async play(fuzz: FuzzCase): Promise<{ outcome: RunOutcome; log: PlayLog; runnerAlive: boolean }> {
    const log = this.player.arm(fuzz);
    const runId = newRunId();
    const outcome = await superviseRun({
      launch: {
        ...bridgeCommand(this.player.socketPath),
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
    return { outcome, log, runnerAlive: outcome.pid !== null && isAlive(outcome.pid) };
  }
}

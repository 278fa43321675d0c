import type { HostConfig } from '../../config/hostConfig.js';
import { requestCancel } from '../../dispatch/runControls.js';
import { HostError } from '../../errors.js';
import { describeRecovery, openHostState } from '../../start.js';

type Out = (text: string) => void;

/**
 * `paddock runs cancel <runId>`: ask whichever paddock process holds a queued or running run to
 * cancel it, through run_controls (the dispatcher's and `paddock run`'s watchers act on it).
 * Exit 0 when requested, 1 when the run had already ended; an unknown run is a HostError (exit 2).
 */
export async function cancelRunCommand(
  config: HostConfig,
  runId: string,
  flags: { json: boolean; reason?: string; by?: string },
  out: Out,
  err: Out,
): Promise<number> {
  // openHostState reconciles first: a run whose host process died is already ended (interrupted) here.
  const { store, recovery } = await openHostState(config);
  try {
    for (const line of describeRecovery(recovery)) err(line);
    const run = store.run(runId);
    if (!run) throw new HostError('NOT_FOUND', `no run ${runId}`);
    if (run.status !== 'queued' && run.status !== 'running') {
      if (flags.json)
        out(JSON.stringify({ runId, cancelRequested: false, status: run.status, reason: run.reason ?? null }));
      else
        err(
          `paddock: run ${runId} already ended ${run.status}${run.reason ? ` (${run.reason})` : ''}; nothing to cancel`,
        );
      return 1;
    }
    const by = `user:${flags.by ?? process.env.USER ?? 'operator'}`;
    const reason = flags.reason ?? 'cancelled with paddock runs cancel';
    requestCancel(store, [runId], reason, by);
    if (flags.json) out(JSON.stringify({ runId, cancelRequested: true, status: run.status, reason, by }));
    else out(`asked the host process holding run ${runId} (${run.status}) to cancel it: ${reason} (by ${by})`);
    return 0;
  } finally {
    store.close();
  }
}

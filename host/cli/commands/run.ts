import type { ChatEventInput } from '../../../sdk/protocol/types.js';
import type { HostConfig } from '../../config/hostConfig.js';
import { TOKENS } from '../../di/tokens.js';
import { RunControlWatcher } from '../../dispatch/runControls.js';
import { OUTCOME_EXIT_CODES, type RunOutcome } from '../../process/outcome.js';
import { describeRecovery, openHost } from '../../start.js';
import type { Renderer } from '../render.js';

/**
 * Run `fn` with Ctrl-C (and SIGTERM) wired to cancel: the first press aborts the signal, a
 * second one exits at once (the exit hook SIGKILLs every live runner group; recovery marks the
 * run interrupted next time).
 */
export async function withInterrupts<T>(renderer: Renderer, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let interrupts = 0;
  const onSigint = () => {
    interrupts += 1;
    if (interrupts === 1) {
      renderer.note('cancelling… (Ctrl-C again to kill the runner now)');
      controller.abort(new Error('interrupted by the user (Ctrl-C)'));
    } else {
      process.exit(OUTCOME_EXIT_CODES.cancelled);
    }
  };
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigint);
  try {
    return await fn(controller.signal);
  } finally {
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigint);
  }
}

/** Render an outcome and return its exit code. */
export function finishRun(renderer: Renderer, outcome: RunOutcome): number {
  renderer.outcome(outcome);
  return OUTCOME_EXIT_CODES[outcome.status];
}

/** Run one event through a runner, render it, and return the process exit code. */
export async function runCommand(args: {
  config: HostConfig;
  runner: string;
  event: ChatEventInput;
  runnerConfig?: Record<string, unknown>;
  renderer: Renderer;
  sandbox?: 'process' | 'bwrap';
  /** Run with less isolation where the machine lacks the backend or a limit (audited). */
  allowDegrade?: boolean;
}): Promise<number> {
  const { container, store, recovery } = await openHost(args.config);
  for (const line of describeRecovery(recovery)) args.renderer.note(line);
  const service = container.resolve(TOKENS.RunService);
  // `paddock runs cancel` from another shell reaches an ad-hoc run through run_controls, as it
  // reaches a dispatched one through the dispatcher's watcher. The run id is known at its start:
  // a request for it written while it waited for its session cancels it as it starts.
  const cancelled = new AbortController();
  const requests = new Map<string, string>();
  let runId: string | undefined;
  const watcher = new RunControlWatcher(store, (control) => {
    const why = `${control.reason} (by ${control.by})`;
    requests.set(control.runId, why);
    if (control.runId === runId) cancelled.abort(new Error(why));
  });
  watcher.start();
  try {
    return await withInterrupts(args.renderer, async (signal) => {
      const outcome = await service.runAdHoc({
        runner: args.runner,
        event: args.event,
        config: args.runnerConfig,
        sandbox: args.sandbox,
        allowDegrade: args.allowDegrade,
        signal: AbortSignal.any([signal, cancelled.signal]),
        onStart: (info) => {
          runId = info.runId;
          args.renderer.started(info);
          const asked = requests.get(info.runId);
          if (asked) cancelled.abort(new Error(asked));
        },
        onUpdate: (update, seq) => args.renderer.update(update, seq),
      });
      return finishRun(args.renderer, outcome);
    });
  } finally {
    watcher.stop();
    store.close();
  }
}

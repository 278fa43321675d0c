import { readFileSync } from 'node:fs';
import type { HostConfig } from '../../config/hostConfig.js';
import { TOKENS } from '../../di/tokens.js';
import { HostError } from '../../errors.js';
import { describeRecovery, openHost } from '../../start.js';
import type { Renderer } from '../render.js';
import { finishRun, withInterrupts } from './run.js';

/** Exit code of an event dispatch refused (no binding, disabled, queue full, …). */
export const REFUSED_EXIT_CODE = 6;

/** Read a JSON document from a file, or from stdin for `-`. */
export function readJsonFile(path: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (error) {
    throw new HostError('INVALID_INPUT', `cannot read ${what} ${path}: ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new HostError('INVALID_INPUT', `${what} ${path} is not valid JSON: ${(error as Error).message}`);
  }
}

/** `paddock dispatch -f event.json`: route a platform event to its binding and stream the run. */
export async function dispatchCommand(
  config: HostConfig,
  file: string,
  renderer: Renderer,
  tenant?: string,
): Promise<number> {
  const event = readJsonFile(file, 'event');
  const { container, store, recovery } = await openHost(config);
  for (const line of describeRecovery(recovery)) renderer.note(line);
  const dispatcher = container.resolve(TOKENS.Dispatcher);
  try {
    return await withInterrupts(renderer, async (signal) => {
      let ticket;
      try {
        ticket = await dispatcher.dispatch(
          event,
          {
            onStart: (info) => renderer.started(info),
            onUpdate: (update, seq) => renderer.update(update, seq),
          },
          { tenant },
        );
      } catch (error) {
        if (error instanceof HostError && (error.code === 'DISPATCH_REFUSED' || error.code === 'INVALID_INPUT')) {
          renderer.note(`refused (${String(error.data.reason ?? error.code)}): ${error.message}`);
          return error.code === 'INVALID_INPUT' ? 2 : REFUSED_EXIT_CODE;
        }
        throw error;
      }
      if (ticket.status === 'duplicate') {
        renderer.note(
          `duplicate: event already dispatched as run ${ticket.runId} (binding ${ticket.bindingId}); nothing started`,
        );
        return 0;
      }
      if (ticket.status === 'appended') {
        // The run is an earlier message's: this command neither follows nor cancels it.
        renderer.note(`appended to the running run ${ticket.runId} (binding ${ticket.bindingId}, steering append)`);
        return 0;
      }
      renderer.note(
        `dispatched to binding ${ticket.bindingId}: run ${ticket.runId} ` +
          `${ticket.status}${ticket.position ? ` (position ${ticket.position})` : ''}` +
          (ticket.notAppended ? `; not appended (${ticket.notAppended.code}): ${ticket.notAppended.message}` : ''),
      );
      signal.addEventListener(
        'abort',
        () => dispatcher.cancelWherever(ticket.runId, String((signal.reason as Error)?.message ?? 'cancelled')),
        { once: true },
      );
      return finishRun(renderer, await ticket.done);
    });
  } finally {
    store.close();
  }
}

// Dispatching for the steering-`append` tests: messages of one conversation, the first one's run held running by
// the rendezvous (test/helpers/rendezvous.ts) until the test says go.
import { expect } from 'vitest';
import type { Dispatcher, DispatchTicket } from '../../host/dispatch/dispatcher.js';
import type { RunOutcome } from '../../host/process/outcome.js';
import { chatEvent } from './host.js';
import type { rendezvous } from './rendezvous.js';

/** `send`, `running` and `outputOf` over a host's dispatcher and a rendezvous. */
export function appendRuns(dispatcher: Dispatcher, rv: ReturnType<typeof rendezvous>) {
  const live = (t: DispatchTicket) => {
    if (t.status === 'duplicate') throw new Error('unexpected duplicate');
    return t;
  };
  /** One message of `conversation`. */
  const send = async (bot: string, text: string, conversation: string) =>
    live(await dispatcher.dispatch(chatEvent({ bot, text, conversation: { id: conversation } })));
  /** A message's first run: started, and running (its runner connected) before the test goes on. */
  const running = async (bot: string, text: string, conversation: string) => {
    const t = await send(bot, text, conversation);
    expect(t.status).toBe('started');
    const ended = await Promise.race([rv.arrived(t.runId).then(() => undefined), t.done]);
    if (ended) throw new Error(`run ended before it connected: ${ended.status} ${ended.reason}`);
    return t;
  };
  const outputOf = (o: RunOutcome) => (o.result?.output?.parts[0] as { text?: string } | undefined)?.text ?? '';
  return { send, running, outputOf };
}

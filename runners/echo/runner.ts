import { setTimeout as sleep } from 'node:timers/promises';
import { defineRunner, eventText, z } from 'paddock/sdk';

/** Echo: replies with the event's text, streamed one word at a time. */
export const echoRunner = defineRunner({
  manifest: { name: 'echo', version: '0.1.0' },
  configSchema: z.strictObject({
    delayMs: z.int().min(0).max(60_000).default(0).describe('Pause between streamed words.'),
    prefix: z.string().max(200).default('').describe('Text put before the echo.'),
  }),
  async run(event, binding, ctx) {
    const reply = `${binding.config.prefix}${eventText(event)}`;
    const words = reply.split(/(?<=\s)/);
    ctx.emit({ kind: 'progress', message: `echoing ${words.length} words` });
    for (const word of words) {
      if (binding.config.delayMs > 0) await sleep(binding.config.delayMs, undefined, { signal: ctx.signal });
      ctx.signal.throwIfAborted();
      ctx.emit({ kind: 'message.delta', text: word });
    }
    return { status: 'completed', output: { parts: [{ type: 'text', text: reply }] } };
  },
});

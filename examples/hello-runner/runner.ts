import { setTimeout as sleep } from 'node:timers/promises';
import { defineRunner, eventText, z } from 'paddock/sdk';

/** Greets the sender word by word; stops when the run is cancelled. */
export const helloRunner = defineRunner({
  manifest: { name: 'hello-runner', version: '1.0.0' },
  configSchema: z.object({ greeting: z.string().default('Hello'), pauseMs: z.int().min(0).default(50) }),
  async run(event, binding, ctx) {
    const name = eventText(event).trim() || event.sender.name || 'there';
    const words = `${binding.config.greeting}, ${name}! Nice to meet you.`.split(' ');
    for (const [i, word] of words.entries()) {
      await sleep(binding.config.pauseMs, undefined, { signal: ctx.signal }); // throws on cancel
      ctx.emit({ kind: 'message.delta', text: i === 0 ? word : ` ${word}` });
    }
    ctx.log.info({ words: words.length }, 'greeted');
    return words.join(' ');
  },
});

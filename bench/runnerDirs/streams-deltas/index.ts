// Benchmark runner: emits `count` message.delta updates of `size` characters as fast as it can.
import { defineRunner, serve, z } from '../../../sdk/index.js';

await serve(
  defineRunner({
    manifest: { name: 'streams-deltas', version: '0' },
    configSchema: z.object({ count: z.int().positive(), size: z.int().positive() }),
    run(_event, binding, ctx) {
      const text = 'x'.repeat(binding.config.size);
      for (let i = 0; i < binding.config.count; i++) ctx.emit({ kind: 'message.delta', text });
      return 'done';
    },
  }),
);

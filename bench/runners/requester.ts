// Benchmark runner: `count` sequential state/get requests; returns the round-trip times it saw.
import { defineRunner, serve, z } from '../../sdk/index.js';

await serve(
  defineRunner({
    manifest: { name: 'bench-requester', version: '0' },
    configSchema: z.object({ count: z.int().positive() }),
    async run(_event, binding, ctx) {
      const times: number[] = [];
      for (let i = 0; i < binding.config.count; i++) {
        const t = performance.now();
        await ctx.state.get('k');
        times.push(performance.now() - t);
      }
      return JSON.stringify(times);
    },
  }),
);

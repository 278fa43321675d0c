import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Decorators are lowered for every file, not only those tsconfig includes. No decorator
  // metadata on purpose: tsx/esbuild cannot emit it, so tests must resolve like production
  // (explicit @inject tokens everywhere; see docs/architecture-decisions.md).
  oxc: { decorator: { legacy: true } },
  test: {
    environment: 'node',
    pool: 'forks',
    setupFiles: ['reflect-metadata'],
    // Tests start bin/paddock.js, which runs dist/: rebuilt here when a source changed (scripts/build.mjs).
    globalSetup: ['test/helpers/buildDist.ts'],
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], testTimeout: 10_000 },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/examples/**/*.test.ts'],
          // Real child processes: spawns, signal ladders and floods take seconds, and the
          // 2-core machines must not run them in parallel with each other.
          testTimeout: 60_000,
          hookTimeout: 60_000,
          fileParallelism: false,
        },
      },
      {
        extends: true,
        test: {
          // The admin console in a real browser (chromium) against a real `paddock serve` (docs/console.md §6).
          name: 'console',
          include: ['test/console/**/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          fileParallelism: false,
        },
      },
    ],
  },
});

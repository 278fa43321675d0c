import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defaultExclude, defineConfig } from 'vitest/config';

/** A file of this repository, by absolute path. */
const repo = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/** Integration files that run alone, after the others (docs/decisions.md, CS8): each with its reason. */
const ALONE = [
  // Each runs two kill points at a time in its own pool: it fills both cores by itself (CS3).
  'test/integration/crashRecovery.test.ts',
  'test/integration/postgres/hostCrashPoints.test.ts',
];

export default defineConfig({
  // Decorators are lowered for every file, not only those tsconfig includes. No decorator
  // metadata on purpose: tsx/esbuild cannot emit it, so tests must resolve like production
  // (explicit @inject tokens everywhere; see docs/architecture-decisions.md).
  oxc: { decorator: { legacy: true } },
  resolve: {
    // The runners' and examples' own package.json (each an npm package, docs/runner-packages.md §8) ends paddock's
    // package scope, so Node's self-reference no longer resolves `paddock/sdk` from them: name the SDK sources, as
    // tsconfig.json's `paths` does for tsc and tsx, and the host's runner build does at run time (compileEntry.ts).
    alias: [
      { find: /^paddock\/sdk$/, replacement: repo('./sdk/index.ts') },
      { find: /^paddock\/sdk\/testing$/, replacement: repo('./sdk/testing/index.ts') },
    ],
  },
  test: {
    environment: 'node',
    pool: 'forks',
    setupFiles: ['reflect-metadata'],
    // Tests start bin/paddock.js, which runs dist/: rebuilt here when a source changed (scripts/build.mjs).
    globalSetup: ['test/helpers/buildDist.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          testTimeout: 10_000,
          // One file per core: vitest's default leaves one core for itself (numCpus - 1), one worker on the 2-core
          // CI, whose second core then idled through the whole project (docs/decisions.md, CS7).
          maxWorkers: availableParallelism(),
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/examples/**/*.test.ts'],
          exclude: [...defaultExclude, ...ALONE],
          // Real child processes: spawns, signal ladders and floods take seconds. One file per core (two on the CI),
          // after the unit project (group 0: its short bounds never share the cores with these files). Each file keeps
          // to its own temp folders, port 0, and its own runs' cgroups, mounts and processes (CS8).
          testTimeout: 60_000,
          hookTimeout: 60_000,
          maxWorkers: availableParallelism(),
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          // The integration files that must not share the machine with another file (ALONE above): one at a time, in
          // vitest's last group (projects without file parallelism run after every sequence.groupOrder group).
          name: 'integration-alone',
          include: ALONE,
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
          // Beside the integration files, two at a time (each its own serve host on port 0 and its own browser).
          maxWorkers: availableParallelism(),
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});

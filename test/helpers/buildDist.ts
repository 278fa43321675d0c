// vitest global setup: tests start the real `paddock` command (bin/paddock.js), which runs the build in dist/;
// rebuild it first when a source changed (scripts/build.mjs; a no-op when up to date), so `npx vitest run`
// after an edit never tests stale code.
import { build } from '../../scripts/build.mjs';

/** Runs once per vitest process, before any test file. */
export default async function setup(): Promise<void> {
  await build({ log: () => undefined });
}

#!/usr/bin/env node
// The `paddock` command: the CLI bundle from the build (dist/cli/, `npm run build`; set-up builds it).
// No TypeScript loader at run time: runner entries are bundled by the host itself (host/plugins/compileEntry.ts).
import { existsSync } from 'node:fs';

const entry = new URL('../dist/cli/entry.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write(
    'paddock: the build is missing (dist/). In a clone of paddock run `npm run setup` (or `npm run build`).\n',
  );
  process.exit(1);
}
await import(entry.href);

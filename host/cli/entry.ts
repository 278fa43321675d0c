// The process entry of the `paddock` command (bin/paddock.js loads its build, dist/host/cli/entry.js; tests also bundle
// it).
import { runMain } from './main.js';

await runMain(process.argv.slice(2));

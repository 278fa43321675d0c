// The process entry of the `paddock` command (bin/paddock.js loads its build, dist/host/cli/entry.js; tests also bundle
// it).
import { runMain } from './main.js';

await runMain(process.argv.slice(2));
// The command has ended: its store is closed and its output written (stdout and stderr are synchronous on Linux for
// files, pipes and terminals). Exit now, with the exit code it set, instead of letting Node free the whole heap
// first, which after a dispatch's ~2 MB of modules costs 50–90 ms (docs/benchmarks.md, "CLI start-up").
process.exit();

// The process entry of the `paddock` command (bin/paddock.js loads its build, dist/host/cli/entry.js; tests also bundle
// it).
import { runMain } from './main.js';

/** Resolves once everything written to `stream` so far has left the process (or the stream failed). */
const flushed = (stream: NodeJS.WriteStream) =>
  new Promise<void>((resolve) => {
    // Writes are ordered: the callback of an empty write runs after every earlier write is handed to the OS.
    stream.write('', () => resolve());
  });

await runMain(process.argv.slice(2));
// The command has ended and its store is closed. Exit now, with the exit code it set, instead of letting Node free
// the whole heap first, which after a dispatch's ~2 MB of modules costs 50–90 ms (docs/benchmarks.md, "CLI
// start-up") — but only after stdout and stderr have flushed: a pipe whose reader is slow takes 64 KiB at once, and
// Node queues the rest in the process, so exiting at once would cut the output there.
await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
process.exit();

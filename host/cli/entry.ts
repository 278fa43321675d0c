// The process entry of the `paddock` command (bin/paddock.js loads it through tsx; tests bundle it).
import { runMain } from './main.js';

await runMain(process.argv.slice(2));

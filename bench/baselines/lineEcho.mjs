// Baseline for the round trip: answers every stdin line with the same line on stdout.
import { createInterface } from 'node:readline';

createInterface({ input: process.stdin }).on('line', (line) => process.stdout.write(`${line}\n`));

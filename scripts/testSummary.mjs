// Prints vitest's totals as one plain line ("N passed, N failed, N skipped") from its JSON report.
import { readFileSync } from 'node:fs';

let report;
try {
  report = JSON.parse(readFileSync(process.argv[2], 'utf8'));
} catch {
  console.log('0 passed, 1 failed (no vitest report was written)');
  process.exit(1);
}
const skipped = report.numPendingTests + report.numTodoTests;
console.log(`${report.numPassedTests} passed, ${report.numFailedTests} failed, ${skipped} skipped`);
if (report.numTotalTests === 0) process.exit(1);

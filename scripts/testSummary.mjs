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
// A test file that fails to load fails no test but its suite: count it, never print "0 failed".
const failed =
  report.numFailedTests > 0 ? report.numFailedTests : report.success ? 0 : Math.max(report.numFailedTestSuites, 1);
console.log(`${report.numPassedTests} passed, ${failed} failed, ${skipped} skipped`);
if (report.numTotalTests === 0 || failed > 0) process.exit(1);

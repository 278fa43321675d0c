// npm run runners:gen   — rewrite each runner.json's configSchema and version from the runner's code
// npm run runners:check — fail if any runner.json differs from its code
import { writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expectedManifest, generatedRunnerDirs } from './runnerManifests.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const check = process.argv.includes('--check');
let stale = 0;
for (const dir of generatedRunnerDirs(root)) {
  const { text, stale: fields } = await expectedManifest(dir);
  if (fields.length === 0) continue;
  stale++;
  const file = relative(root, join(dir, 'runner.json'));
  if (check) process.stderr.write(`stale: ${file} (${fields.join(', ')})\n`);
  else {
    writeFileSync(join(dir, 'runner.json'), text);
    process.stdout.write(`wrote ${file} (${fields.join(', ')})\n`);
  }
}
if (check && stale > 0) {
  process.stderr.write('run: npm run runners:gen\n');
  process.exit(1);
}
if (stale === 0) process.stdout.write("every runner.json matches its runner's code\n");

// npm run openapi:gen   — rewrite docs/openapi.json from the route schemas of host/api/
// npm run openapi:check — fail if it is stale
import { readFileSync, writeFileSync } from 'node:fs';
import { openApiDocument } from '../host/api/openapiDoc.js';

const PATH = new URL('../docs/openapi.json', import.meta.url);
const expected = await openApiDocument();
if (process.argv.includes('--check')) {
  let current = '';
  try {
    current = readFileSync(PATH, 'utf8');
  } catch {
    // missing: stale
  }
  if (current !== expected) {
    process.stderr.write(`stale: ${PATH.pathname}\nrun: npm run openapi:gen\n`);
    process.exit(1);
  }
  process.stdout.write('docs/openapi.json is up to date\n');
} else {
  writeFileSync(PATH, expected);
  process.stdout.write('wrote docs/openapi.json\n');
}

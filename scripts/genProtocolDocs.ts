// npm run protocol:gen  — rewrite docs/protocol.schema.json, the generated parts of docs/protocol.md,
//                         docs/runner-manifest.schema.json and docs/paddock.schema.json
// npm run protocol:check — fail if either is stale
import { readFileSync, writeFileSync } from 'node:fs';
import { CONFIG_SCHEMA_PATH, DOC_PATH, MANIFEST_SCHEMA_PATH, SCHEMA_PATH, expectedFiles } from './protocolDocs.js';

const expected = expectedFiles();
if (process.argv.includes('--check')) {
  const stale = [
    [SCHEMA_PATH, expected.schema],
    [DOC_PATH, expected.doc],
    [MANIFEST_SCHEMA_PATH, expected.manifestSchema],
    [CONFIG_SCHEMA_PATH, expected.configSchema],
  ].filter(([path, text]) => {
    try {
      return readFileSync(path as URL, 'utf8') !== text;
    } catch {
      return true;
    }
  });
  if (stale.length > 0) {
    process.stderr.write(`stale: ${stale.map(([p]) => (p as URL).pathname).join(', ')}\nrun: npm run protocol:gen\n`);
    process.exit(1);
  }
  process.stdout.write('protocol docs and schema are up to date\n');
} else {
  writeFileSync(SCHEMA_PATH, expected.schema);
  writeFileSync(DOC_PATH, expected.doc);
  writeFileSync(MANIFEST_SCHEMA_PATH, expected.manifestSchema);
  writeFileSync(CONFIG_SCHEMA_PATH, expected.configSchema);
  process.stdout.write(
    'wrote docs/protocol.schema.json, docs/protocol.md, docs/runner-manifest.schema.json and ' +
      'docs/paddock.schema.json\n',
  );
}

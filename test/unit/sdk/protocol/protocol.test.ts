import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../../../sdk/protocol/errorCodes.js';
import { HOST_METHODS, NOTIFICATIONS, RUNNER_METHODS } from '../../../../sdk/protocol/methods.js';
import { PROTOCOL_TYPES, type ProtocolTypeName } from '../../../../sdk/protocol/registry.js';
import { expectedFiles } from '../../../../scripts/protocolDocs.js';
import { repoPath } from '../../../helpers/fixtures.js';

const EXAMPLES = repoPath('test/fixtures/protocol');
const schemaDoc = JSON.parse(readFileSync(repoPath('docs/protocol.schema.json'), 'utf8')) as {
  $defs: Record<string, unknown>;
};
// Timestamps are enforced by the `pattern` zod emits; the `format` annotation is informative.
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema(schemaDoc, 'protocol');
const jsonSchemaValidates = (type: string, value: unknown) => ajv.validate({ $ref: `protocol#/$defs/${type}` }, value);

function examples(dir: string): [string, string, unknown][] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name !== 'invalid')
    .flatMap((d) =>
      readdirSync(join(dir, d.name)).map((file): [string, string, unknown] => [
        d.name,
        file,
        JSON.parse(readFileSync(join(dir, d.name, file), 'utf8')),
      ]),
    );
}

describe('protocol v1 schemas', () => {
  const valid = examples(EXAMPLES);
  const invalid = examples(join(EXAMPLES, 'invalid'));

  it('has example messages for every request/notification params type and every update kind', () => {
    const covered = new Set(valid.map(([type]) => type));
    for (const m of Object.values({ ...RUNNER_METHODS, ...NOTIFICATIONS })) {
      const name = Object.entries(PROTOCOL_TYPES).find(([, s]) => s === m.params)?.[0];
      if (name !== 'ShutdownParams') expect(covered, `no example for ${name}`).toContain(name);
    }
    const kinds = new Set(
      valid.filter(([t]) => t === 'RunUpdateParams').map(([, , v]) => (v as { update: { kind: string } }).update.kind),
    );
    expect([...kinds].sort()).toEqual([
      'artifact',
      'log',
      'message',
      'message.delta',
      'progress',
      'tool.finished',
      'tool.started',
      'usage',
    ]);
    // Every host request has an example of its params and of its result.
    for (const m of Object.values(HOST_METHODS)) {
      for (const schema of [m.params, m.result]) {
        const name = Object.entries(PROTOCOL_TYPES).find(([, s]) => s === schema)?.[0];
        expect(covered, `no example for ${name}`).toContain(name);
      }
    }
  });

  it.each(valid)('%s/%s parses with zod and validates against docs/protocol.schema.json', (type, _file, value) => {
    const schema = PROTOCOL_TYPES[type as ProtocolTypeName];
    expect(schema, `unknown type folder ${type}`).toBeDefined();
    const parsed = schema.safeParse(value);
    expect(parsed.error?.issues ?? []).toEqual([]);
    expect(jsonSchemaValidates(type, value), JSON.stringify(ajv.errors)).toBe(true);
  });

  it.each(invalid)('invalid/%s/%s is rejected by zod and by the JSON Schema', (type, _file, value) => {
    expect(PROTOCOL_TYPES[type as ProtocolTypeName].safeParse(value).success).toBe(false);
    expect(jsonSchemaValidates(type, value)).toBe(false);
  });

  it('keeps unknown fields on loose objects so newer peers interoperate', () => {
    const parsed = PROTOCOL_TYPES.InitializeResult.parse(valid.find(([, f]) => f === 'with-extension.json')![2]);
    expect((parsed as Record<string, unknown>)['x-vendor']).toEqual({ a: 1 });
  });

  it('error codes are unique, standard or inside the reserved paddock range', () => {
    const codes = Object.values(ErrorCodes);
    expect(new Set(codes).size).toBe(codes.length);
    for (const code of codes) {
      const standard = [-32700, -32600, -32601, -32602, -32603].includes(code);
      expect(standard || (code <= -32000 && code >= -32049), `code ${code}`).toBe(true);
    }
  });

  it(
    'docs/protocol.schema.json and docs/protocol.md are generated from the current schemas (npm run ' + 'protocol:gen)',
    () => {
      const expected = expectedFiles();
      expect(readFileSync(repoPath('docs/protocol.schema.json'), 'utf8')).toBe(expected.schema);
      expect(readFileSync(repoPath('docs/protocol.md'), 'utf8')).toBe(expected.doc);
      expect(readFileSync(repoPath('docs/runner-manifest.schema.json'), 'utf8')).toBe(expected.manifestSchema);
    },
  );

  it('names every $defs entry after its type (no anonymous schema0) and every $ref resolves', () => {
    const names = Object.keys(schemaDoc.$defs);
    expect(names.filter((n) => !/^[A-Z][A-Za-z]+$/.test(n))).toEqual([]);
    const refs = [...JSON.stringify(schemaDoc).matchAll(/"\$ref":"#\/\$defs\/([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(40);
    expect(refs.filter((r) => !names.includes(r))).toEqual([]);
    expect(readFileSync(repoPath('docs/protocol.md'), 'utf8')).not.toMatch(/schema\d/);
  });
});

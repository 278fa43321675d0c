// Generates docs/protocol.schema.json and the generated sections of docs/protocol.md from the
// zod schemas in sdk/protocol (the single source of the protocol).
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ERROR_CODE_MEANINGS, ErrorCodes, type ErrorCodeName } from '../sdk/protocol/errorCodes.js';
import { HOST_METHODS, NOTIFICATIONS, RUNNER_METHODS } from '../sdk/protocol/methods.js';
import { PROTOCOL_TYPES } from '../sdk/protocol/registry.js';
import { UPDATE_KINDS } from '../sdk/protocol/schemas/updates.js';
import { PROTOCOL_VERSION } from '../sdk/protocol/version.js';
import { RunnerManifestSchema } from '../host/plugins/manifest.js';
import { ConfigFileSchema } from '../host/bindings/schema.js';

export const SCHEMA_PATH = new URL('../docs/protocol.schema.json', import.meta.url);
export const DOC_PATH = new URL('../docs/protocol.md', import.meta.url);
export const MANIFEST_SCHEMA_PATH = new URL('../docs/runner-manifest.schema.json', import.meta.url);
export const CONFIG_SCHEMA_PATH = new URL('../docs/paddock.schema.json', import.meta.url);

const ALL_METHODS = { ...RUNNER_METHODS, ...HOST_METHODS, ...NOTIFICATIONS } as Record<
  string,
  { kind: 'request' | 'notification'; direction: string; params: z.ZodType; result?: z.ZodType; summary: string }
>;

function typeName(schema: z.ZodType): string {
  const entry = Object.entries(PROTOCOL_TYPES).find(([, s]) => s === schema);
  if (!entry) throw new Error('a method uses a schema missing from PROTOCOL_TYPES');
  return entry[0];
}

/** The JSON Schema document of protocol v1: every type under `$defs`, plus the method table. */
export function buildJsonSchema(): Record<string, unknown> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(PROTOCOL_TYPES)) registry.add(schema, { id });
  // Input form: what a sender may write (fields with defaults are optional).
  const generated = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io: 'input',
    uri: (id) => `#/$defs/${id}`,
  }) as {
    schemas: Record<string, Record<string, unknown>>;
  };
  const defs: Record<string, unknown> = {};
  for (const [id, schema] of Object.entries(generated.schemas)) {
    const { $schema: _s, $id: _i, $defs: nested, ...rest } = schema;
    if (id === '__shared') Object.assign(defs, nested as Record<string, unknown>);
    else defs[id] = rest;
  }
  const methods = Object.fromEntries(
    Object.entries(ALL_METHODS).map(([name, m]) => [
      name,
      {
        kind: m.kind,
        direction: m.direction,
        params: { $ref: `#/$defs/${typeName(m.params)}` },
        ...(m.result ? { result: { $ref: `#/$defs/${typeName(m.result)}` } } : {}),
        description: m.summary,
      },
    ]),
  );
  const doc = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: `paddock-runner-protocol-v${PROTOCOL_VERSION}`,
    title: `paddock runner protocol v${PROTOCOL_VERSION}`,
    description: 'Generated from sdk/protocol by `npm run protocol:gen`. Do not edit. See docs/protocol.md.',
    protocolVersion: PROTOCOL_VERSION,
    'x-methods': methods,
    'x-error-codes': Object.fromEntries(Object.entries(ErrorCodes).map(([k, v]) => [k, v])),
    $defs: defs,
  };
  return JSON.parse(JSON.stringify(doc).replaceAll('#/$defs/__shared#/$defs/', '#/$defs/')) as Record<string, unknown>;
}

function methodsTable(): string {
  const rows = Object.entries(ALL_METHODS).map(
    ([name, m]) =>
      `| \`${name}\` | ${m.kind} | ${m.direction} | [${typeName(m.params)}](#${typeName(m.params).toLowerCase()}) | ${
        m.result ? `[${typeName(m.result)}](#${typeName(m.result).toLowerCase()})` : '—'
      } | ${m.summary} |`,
  );
  return ['| method | kind | direction | params | result | what it does |', '|---|---|---|---|---|---|', ...rows].join(
    '\n',
  );
}

function errorTable(): string {
  const rows = (Object.keys(ErrorCodes) as ErrorCodeName[]).map(
    (k) => `| ${ErrorCodes[k]} | \`${k}\` | ${ERROR_CODE_MEANINGS[k]} |`,
  );
  return ['| code | name | meaning |', '|---|---|---|', ...rows].join('\n');
}

function typesSection(schema: Record<string, unknown>): string {
  const defs = schema.$defs as Record<string, unknown>;
  return Object.keys(PROTOCOL_TYPES)
    .map((name) => `#### ${name}\n\n\`\`\`json\n${JSON.stringify(defs[name], null, 2)}\n\`\`\``)
    .join('\n\n');
}

const SECTIONS: Record<string, (schema: Record<string, unknown>) => string> = {
  methods: () => methodsTable(),
  'update-kinds': () => UPDATE_KINDS.map((k) => `\`${k}\``).join(', '),
  'error-codes': () => errorTable(),
  types: (schema) => typesSection(schema),
};

/** docs/protocol.md with each `<!-- generated:NAME -->…<!-- /generated:NAME -->` section rebuilt. */
export function renderProtocolDoc(current: string, schema = buildJsonSchema()): string {
  let out = current;
  for (const [name, render] of Object.entries(SECTIONS)) {
    const open = `<!-- generated:${name} -->`;
    const close = `<!-- /generated:${name} -->`;
    const start = out.indexOf(open);
    const end = out.indexOf(close);
    if (start === -1 || end === -1) throw new Error(`docs/protocol.md lacks the ${open} … ${close} markers`);
    out = `${out.slice(0, start + open.length)}\n${render(schema)}\n${out.slice(end)}`;
  }
  return out;
}

/** The JSON Schema of `runner.json`, for runner authors writing manifests by hand or in other languages. */
export function buildManifestSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(RunnerManifestSchema, { target: 'draft-2020-12', io: 'input' }) as Record<
    string,
    unknown
  >;
  return {
    ...generated,
    $id: 'paddock-runner-manifest',
    description:
      'Generated from host/plugins/manifest.ts by `npm run protocol:gen`. Do not edit. See docs/runner-authoring.md.',
  };
}

/**
 * The JSON Schema of `paddock.yaml` (input form: fields with defaults are optional), for editor
 * completion (`# yaml-language-server: $schema=…`). Checks zod cannot express as JSON Schema
 * (absolute paths, valid regular expressions, references, runner configs) are done by `apply`.
 */
export function buildConfigSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(ConfigFileSchema, { target: 'draft-2020-12', io: 'input' }) as Record<
    string,
    unknown
  >;
  const { $schema, ...rest } = generated;
  return {
    $schema,
    $id: 'paddock-config',
    title: 'paddock.yaml',
    description:
      'Generated from host/bindings/schema.ts by `npm run protocol:gen`. Do not edit. See docs/admin-guide.md.',
    ...rest,
  };
}

/** What the committed files should contain. */
export function expectedFiles(): { schema: string; doc: string; manifestSchema: string; configSchema: string } {
  const schema = buildJsonSchema();
  return {
    schema: `${JSON.stringify(schema, null, 2)}\n`,
    doc: renderProtocolDoc(readFileSync(DOC_PATH, 'utf8'), schema),
    manifestSchema: `${JSON.stringify(buildManifestSchema(), null, 2)}\n`,
    configSchema: `${JSON.stringify(buildConfigSchema(), null, 2)}\n`,
  };
}

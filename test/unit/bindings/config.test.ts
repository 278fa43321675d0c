import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { stringify as toYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { applyConfig } from '../../../host/bindings/apply.js';
import { ConfigRepo } from '../../../host/bindings/configRepo.js';
import { findInlineSecret } from '../../../host/secrets/inlineSecrets.js';
import { matchBinding } from '../../../host/bindings/routing.js';
import { BindingSchema } from '../../../host/bindings/schema.js';
import { parseConfigText, validateConfig } from '../../../host/bindings/validateConfig.js';
import { HostError } from '../../../host/errors.js';
import { discoverRunners } from '../../../host/plugins/catalog.js';
import { repoPath } from '../../helpers/fixtures.js';
import { FIXTURE_RUNNERS } from '../../helpers/host.js';
import { tempStore } from '../../helpers/store.js';

const catalog = discoverRunners([FIXTURE_RUNNERS]);
const context = { catalog, mountRoots: [] as string[] };

/** The HostError message of validating `raw`, or 'valid'. */
function problem(raw: unknown, ctx = context): string {
  try {
    validateConfig(raw, ctx);
    return 'valid';
  } catch (error) {
    expect(error).toBeInstanceOf(HostError);
    expect((error as HostError).code).toBe('CONFIG_INVALID');
    return (error as HostError).message;
  }
}

describe('configuration validation', () => {
  it('refuses an apparent inline secret anywhere, naming the field; references and lookalikes pass', () => {
    const model = (extra: object) => ({
      resources: { models: [{ id: 'm', provider: 'anthropic', model: 'x', ...extra }] },
    });
    expect(problem(model({ apiKey: 'abc123' }))).toMatch(/^resources\.models\[0\]\.apiKey: apparent inline secret/);
    expect(
      problem({
        bindings: [{ id: 'b', runner: 'echo', config: { prefix: 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz' } }],
      }),
    ).toMatch(
      /^bindings\[0\]\.config\.prefix: apparent inline secret: the value looks like an OpenAI\/Anthropic-style key/,
    );
    expect(problem({ bindings: [{ id: 'b', runner: 'echo', config: { githubToken: 'x' } }] })).toMatch(
      /^bindings\[0\]\.config\.githubToken: apparent inline secret/,
    );
    expect(problem({ resources: { mcpServers: [{ id: 's', url: 'https://bob:hunter2@mcp.example/x' }] } })).toMatch(
      /^resources\.mcpServers\[0\]\.url: .*password in a URL/,
    );
    expect(
      problem({
        resources: { mcpServers: [{ id: 's', command: 'x', args: ['--key', '-----BEGIN RSA PRIVATE KEY-----'] }] },
      }),
    ).toMatch(/^resources\.mcpServers\[0\]\.args\[1\]: .*private key/);
    expect(
      findInlineSecret({
        apiKey: { env: 'ANTHROPIC_API_KEY' },
        maxTokens: 100,
        tokenizer: 'cl100k',
        passwordHint: undefined,
      }),
    ).toBeUndefined();
    expect(problem(model({ apiKey: { env: 'ANTHROPIC_API_KEY' } }))).toBe('valid');
    expect(problem(model({ apiKey: { file: '/etc/paddock/key' } }))).toBe('valid');
  });

  it("refuses a binding config that fails the runner's schema, naming the field", () => {
    expect(problem({ bindings: [{ id: 'b', runner: 'echo', config: { delayMs: 'slow' } }] })).toBe(
      'bindings[0].config.delayMs: must be integer',
    );
    expect(problem({ bindings: [{ id: 'b', runner: 'echo', config: { colour: 'red' } }] })).toMatch(
      /^bindings\[0\]\.config\.colour: is not allowed/,
    );
    expect(problem({ bindings: [{ id: 'b', runner: 'waits-for-go', config: {} }] })).toMatch(
      /^bindings\[0\]\.config\.socket: must have required property/,
    );
    expect(problem({ bindings: [{ id: 'b', runner: 'echo', config: { delayMs: 5 } }] })).toBe('valid');
  });

  it('names the field of malformed objects, unknown references, duplicates and tools outside the server lists', () => {
    expect(problem({ bindings: [{ id: 'B!', runner: 'echo' }] })).toMatch(/^bindings\[0\]\.id: /);
    expect(problem({ bindings: [{ id: 'b', runner: 'echo', grants: { modles: [] } }] })).toMatch(
      /^bindings\[0\]\.grants: Unrecognized key: "modles"/,
    );
    expect(problem({ bindings: [{ id: 'b', runner: 'nope' }] })).toBe(
      'bindings[0].runner: no runner "nope" (see paddock runners list)',
    );
    expect(problem({ bindings: [{ id: 'b', runner: 'broken-manifest' }] })).toMatch(/^bindings\[0\]\.runner: /);
    expect(problem({ bindings: [{ id: 'b', runner: 'echo', grants: { knowledgeBases: ['kb'] } }] })).toBe(
      'bindings[0].grants.knowledgeBases[0]: no knowledgeBases resource "kb"',
    );
    expect(
      problem({
        bindings: [
          { id: 'b', runner: 'echo' },
          { id: 'b', runner: 'echo', route: { bot: 'x' } },
        ],
      }),
    ).toBe('bindings[1].id: duplicate id "b"');
    // Gateway resources and budgets.
    const unpriced = {
      models: [
        { id: 'm', provider: 'scripted', model: 'x' },
        { id: 'p', provider: 'scripted', model: 'y', pricing: { inputPerMTokUsd: 3, outputPerMTokUsd: 15 } },
      ],
    };
    expect(
      problem({
        resources: unpriced,
        bindings: [
          {
            id: 'b',
            runner: 'tries-every-host-request',
            grants: { models: ['m', 'p'] },
            limits: { modelCostPerRunUsd: 1 },
          },
        ],
      }),
    ).toBe('bindings[0].limits.modelCostPerRunUsd: a cost budget needs pricing on every granted model; m has none');
    expect(
      problem({
        resources: unpriced,
        bindings: [
          { id: 'b', runner: 'tries-every-host-request', grants: { models: ['p'] }, limits: { modelCostPerDayUsd: 1 } },
        ],
      }),
    ).toBe('valid');
    expect(problem({ resources: { models: [{ id: 'm', provider: 'anthropic', model: 'claude' }] } })).toBe(
      'resources.models[0].apiKey: a provider model needs apiKey ({env} or {file})',
    );
    expect(
      problem({ resources: { models: [{ id: 'm', provider: 'scripted', model: 'x', script: [{ match: '(' }] }] } }),
    ).toMatch(/^resources\.models\[0\]\.script\[0\]\.match: not a valid regular expression/);
    expect(problem({ resources: { knowledgeBases: [{ id: 'kb', path: '/', url: 'http://127.0.0.1:1/' }] } })).toBe(
      'resources.knowledgeBases[0].path: give exactly one of path or url',
    );
    expect(problem({ resources: { knowledgeBases: [{ id: 'kb', path: '/nonexistent-kb-folder' }] } })).toBe(
      'resources.knowledgeBases[0].path: /nonexistent-kb-folder is not a directory',
    );
    expect(problem({ bindings: [{ id: 'b', runner: 'echo', readPaths: ['/etc'] }] })).toMatch(
      /^bindings\[0\]\.readPaths\[0\]: \/etc is not an existing path under an allowed mount root/,
    );
    expect(problem({ bindings: [{ id: 'b', runner: 'echo', readPaths: ['relative/path'] }] })).toMatch(
      /^bindings\[0\]\.readPaths\[0\]: must be an absolute path/,
    );
    const servers = {
      mcpServers: [{ id: 'gh', command: 'gh-mcp', tools: { allow: ['search', 'delete_repo'], deny: ['delete_repo'] } }],
    };
    expect(
      problem({
        resources: servers,
        bindings: [
          {
            id: 'b',
            runner: 'tries-every-host-request',
            grants: { mcpServers: [{ id: 'gh', tools: ['delete_repo'] }] },
          },
        ],
      }),
    ).toBe('bindings[0].grants.mcpServers[0].tools[0]: tool "delete_repo" is on server gh\'s deny list');
    expect(
      problem({
        resources: servers,
        bindings: [
          { id: 'b', runner: 'tries-every-host-request', grants: { mcpServers: [{ id: 'gh', tools: ['push'] }] } },
        ],
      }),
    ).toMatch(/not on server gh's allow list/);
    expect(problem({ resources: { mcpServers: [{ id: 's', command: 'x', url: 'http://127.0.0.1/' }] } })).toBe(
      'resources.mcpServers[0].command: give exactly one of command or url',
    );
    expect(problem(parseConfigText('bindings:\n  - id: b\n    runner: echo\n    enabled: maybe\n', 'f.yaml'))).toMatch(
      /^bindings\[0\]\.enabled: /,
    );
    expect(() => parseConfigText('bindings: [\n', 'f.yaml')).toThrow(/^f\.yaml \(line \d+\): not valid YAML/);
  });

  it('refuses two enabled bindings with the same route; a disabled twin is fine', () => {
    const twin = (enabled: boolean) => ({
      bindings: [
        { id: 'a', runner: 'echo', route: { bot: 'x' } },
        { id: 'b', runner: 'echo', route: { bot: 'x' }, enabled },
      ],
    });
    expect(problem(twin(true))).toMatch(/^bindings\[0\]\.route: binding "a" has the same route as "b"/);
    expect(problem(twin(false))).toBe('valid');
    expect(
      problem({
        bindings: [
          { id: 'a', runner: 'echo', route: { bot: 'x', eventTypes: ['message'] } },
          { id: 'b', runner: 'echo', route: { bot: 'x', eventTypes: ['reaction'] } },
        ],
      }),
    ).toBe('valid');
  });

  it('mounts must be directories under an allowed root; a symlink that leads out is refused', () => {
    const root = mkdtempSync(join(tmpdir(), 'paddock-roots-'));
    const outside = mkdtempSync(join(tmpdir(), 'paddock-outside-'));
    mkdirSync(join(root, 'repo'));
    symlinkSync(outside, join(root, 'escape'));
    const mount = (path: string) => ({ resources: { mounts: [{ id: 'm', path }] } });
    expect(problem(mount(join(root, 'repo')))).toMatch(/no mount roots are configured/);
    const ctx = { catalog, mountRoots: [root] };
    expect(problem(mount(join(root, 'repo')), ctx)).toBe('valid');
    expect(problem(mount(outside), ctx)).toMatch(
      /^resources\.mounts\[0\]\.path: .* is not under an allowed mount root/,
    );
    expect(problem(mount(join(root, 'escape')), ctx)).toMatch(/is not under an allowed mount root/);
    expect(problem(mount(join(root, 'repo', '..', '..')), ctx)).toMatch(/is not under an allowed mount root/);
    expect(problem(mount(join(root, 'missing')), ctx)).toMatch(/is not a directory/);
  });
});

describe('apply (SQLite is the source of truth)', () => {
  const by = 'user:test';
  const base = {
    bindings: [
      { id: 'one', runner: 'echo', route: { bot: 'one' } },
      { id: 'two', runner: 'echo', route: { bot: 'two' } },
    ],
  };

  it('versions every change, keeps its history, audits it in the same transaction; unchanged objects stay put', () => {
    const { store } = tempStore();
    const repo = new ConfigRepo(store);
    expect(applyConfig(store, base, context, { by }).changes.map((c) => c.action)).toEqual(['created', 'created']);
    expect(applyConfig(store, base, context, { by }).changes.map((c) => c.action)).toEqual(['unchanged', 'unchanged']);
    const changed = { bindings: [{ ...base.bindings[0], config: { prefix: '> ' } }, base.bindings[1]] };
    expect(applyConfig(store, changed, context, { by }).changes.map((c) => c.action)).toEqual(['updated', 'unchanged']);
    expect(repo.binding('one').version).toBe(2);
    expect(repo.history('binding', 'one').map((h) => `${h.version} ${h.action} ${h.by}`)).toEqual([
      '1 created user:test',
      '2 updated user:test',
    ]);
    const audit = store.audit.records({ types: ['config.created', 'config.updated', 'config.deleted'] });
    expect(audit.map((r) => `${r.type} ${(r.data as { id: string }).id}`)).toEqual([
      'config.created one',
      'config.created two',
      'config.updated one',
    ]);
    expect(audit.every((r) => r.actor === by)).toBe(true);
    store.close();
  });

  it('is all or nothing: one bad object changes nothing', () => {
    const { store } = tempStore();
    applyConfig(store, base, context, { by });
    const auditBefore = store.audit.records().length;
    const bad = {
      bindings: [
        { id: 'one', runner: 'echo', config: { prefix: 'new' } },
        { id: 'three', runner: 'echo', config: { delayMs: -1 } },
      ],
    };
    expect(() => applyConfig(store, bad, context, { by })).toThrow(/bindings\[1\]\.config\.delayMs/);
    const repo = new ConfigRepo(store);
    expect(repo.binding('one').version).toBe(1);
    expect(repo.get('binding', 'three')).toBeUndefined();
    expect(store.audit.records().length).toBe(auditBefore);
    store.close();
  });

  it(
    'without --prune keeps (and checks against) what the file does not mention; --prune deletes it; --dry-run ' +
      'writes nothing',
    () => {
      const { store } = tempStore();
      const repo = new ConfigRepo(store);
      applyConfig(
        store,
        { resources: { knowledgeBases: [{ id: 'kb', url: 'http://127.0.0.1:9/retrieve' }] }, ...base },
        context,
        { by },
      );
      // A file with only one binding that references the stored knowledge base: valid, nothing deleted.
      applyConfig(
        store,
        {
          bindings: [
            {
              id: 'three',
              runner: 'tries-every-host-request',
              route: { bot: 'three' },
              grants: { knowledgeBases: ['kb'] },
            },
          ],
        },
        context,
        { by },
      );
      expect(repo.list('binding').map((o) => o.id)).toEqual(['one', 'three', 'two']);
      // The same route as a stored binding is caught too.
      expect(() =>
        applyConfig(store, { bindings: [{ id: 'four', runner: 'echo', route: { bot: 'one' } }] }, context, { by }),
      ).toThrow(/^bindings\[0\]\.route: binding "four" has the same route as "one"/);
      const dry = applyConfig(store, base, context, { by, prune: true, dryRun: true });
      expect(dry.changes.filter((c) => c.action === 'deleted').map((c) => `${c.kind}/${c.id}`)).toEqual([
        'binding/three',
        'knowledgeBase/kb',
      ]);
      expect(repo.list().length).toBe(4);
      applyConfig(store, base, context, { by, prune: true });
      expect(repo.list().map((o) => o.id)).toEqual(['one', 'two']);
      expect(repo.history('binding', 'three').at(-1)!.action).toBe('deleted');
      store.close();
    },
  );

  it('export is a file apply accepts unchanged', () => {
    const { store } = tempStore();
    const dir = mkdtempSync(join(tmpdir(), 'paddock-art-'));
    mkdirSync(join(dir, 'skill'));
    writeFileSync(join(dir, 'skill', 'SKILL.md'), '---\nname: s\n---\nDo the thing.\n');
    const file = {
      resources: {
        models: [{ id: 'm', provider: 'anthropic', model: 'claude', apiKey: { env: 'ANTHROPIC_API_KEY' } }],
        mcpServers: [{ id: 'gh', command: 'gh-mcp', tools: { deny: ['delete_repo'] } }],
        skills: [{ id: 's', name: 's', path: join(dir, 'skill') }],
      },
      bindings: [
        {
          id: 'b',
          runner: 'tries-every-host-request',
          grants: { models: ['m'], mcpServers: ['gh'], skills: ['s'], state: 'binding' },
          steering: 'restart',
        },
      ],
    };
    applyConfig(store, file, context, { by });
    const exported = parseConfigText(toYaml(new ConfigRepo(store).snapshot()), 'export.yaml');
    expect(
      applyConfig(store, exported, context, { by, prune: true }).changes.every((c) => c.action === 'unchanged'),
    ).toBe(true);
    store.close();
  });
});

describe('routing', () => {
  const b = (id: string, route: object, enabled = true) => BindingSchema.parse({ id, runner: 'echo', route, enabled });
  const event = {
    id: 'e',
    type: 'message',
    platform: 'tg',
    bot: 'bot',
    conversation: { type: 'group' as const, id: 'c1' },
    sender: { id: 'u' },
    message: { parts: [{ type: 'text' as const, text: 'x' }] },
    receivedAt: new Date().toISOString(),
  };

  it('the most specific matching route wins; event types filter; a disabled specific binding is not bypassed', () => {
    const all = [
      b('any', {}),
      b('platform', { platform: 'tg' }),
      b('bot', { platform: 'tg', bot: 'bot' }),
      b('type', { bot: 'bot', conversation: { type: 'group' } }),
      b('conv', { conversation: { id: 'c1' } }),
    ];
    expect(matchBinding(all, event)?.id).toBe('conv');
    expect(matchBinding(all.slice(0, 4), event)?.id).toBe('type');
    expect(matchBinding(all.slice(0, 3), event)?.id).toBe('bot');
    expect(matchBinding(all.slice(0, 3), { ...event, type: 'reaction' })).toBeUndefined();
    expect(matchBinding([b('bot', { bot: 'bot' }), b('conv', { conversation: { id: 'c1' } }, false)], event)?.id).toBe(
      'conv',
    );
    expect(matchBinding([b('other', { platform: 'slack' })], event)).toBeUndefined();
  });
});

describe('runner discovery', () => {
  it('reports a broken manifest with its file and field while the other runners load', () => {
    const problem = catalog.problems.find((p) => p.file.endsWith('broken-manifest/runner.json'))!;
    expect(problem).toBeDefined();
    expect(problem.field).toBeTruthy();
    expect(catalog.runners.has('echo')).toBe(true);
    expect(catalog.runners.has('tries-every-host-request')).toBe(true);
    expect(catalog.runners.get('echo')!.source).toBe('builtin');
  });

  it("the echo runner's manifest config schema says what its zod config schema accepts", async () => {
    const { z } = await import('zod');
    const { echoRunner } = await import('../../../runners/echo/runner.js');
    const strip = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(strip)
        : v && typeof v === 'object'
          ? Object.fromEntries(
              Object.entries(v)
                .filter(([k]) => k !== 'description' && k !== '$schema')
                .map(([k, x]) => [k, strip(x)]),
            )
          : v;
    expect(strip(catalog.runners.get('echo')!.manifest.configSchema)).toEqual(
      strip(z.toJSONSchema(echoRunner.configSchema!, { io: 'input' })),
    );
  });

  it('every shipped runner.json validates against the published docs/runner-manifest.schema.json', () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    const validate = ajv.compile(JSON.parse(readFileSync(repoPath('docs/runner-manifest.schema.json'), 'utf8')));
    const dirs = [
      ...readdirSync(repoPath('runners')).map((d) => repoPath(`runners/${d}`)),
      repoPath('examples/hello-runner'),
      ...readdirSync(FIXTURE_RUNNERS)
        .filter((d) => d !== 'broken-manifest')
        .map((d) => join(FIXTURE_RUNNERS, d)),
    ].filter((d) => existsSync(join(d, 'runner.json')));
    expect(dirs.length).toBeGreaterThan(5);
    for (const dir of dirs)
      expect(
        validate(JSON.parse(readFileSync(join(dir, 'runner.json'), 'utf8'))),
        `${dir}: ${JSON.stringify(validate.errors)}`,
      ).toBe(true);
    expect(validate(JSON.parse(readFileSync(join(FIXTURE_RUNNERS, 'broken-manifest/runner.json'), 'utf8')))).toBe(
      false,
    );
  });
});

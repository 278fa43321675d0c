import { describe, expect, it } from 'vitest';
import { validateConfig, type ConfigProblem } from '../../../host/bindings/validateConfig.js';
import { HostError } from '../../../host/errors.js';
import { discoverRunners } from '../../../host/plugins/catalog.js';
import { SUGGEST_MAX_CHARS, SUGGEST_MAX_NAMES, didYouMean, editDistance } from '../../../host/util/didYouMean.js';
import { FIXTURE_RUNNERS } from '../../helpers/host.js';

const context = { catalog: discoverRunners([FIXTURE_RUNNERS]), mountRoots: [] as string[], source: 'paddock.yaml' };

/** The CONFIG_INVALID error of validating `raw` (fails the test when it validates). */
function refusal(raw: unknown): HostError & { data: { problems: ConfigProblem[] } } {
  try {
    validateConfig(raw, context);
  } catch (error) {
    expect(error).toBeInstanceOf(HostError);
    expect((error as HostError).code).toBe('CONFIG_INVALID');
    return error as never;
  }
  throw new Error('the configuration validated');
}

describe('config validation reports every problem of a file at once', () => {
  it(
    'lists structural, reference and runner-config problems together, nested and in arrays, each with file and ' +
      'field',
    () => {
      const error = refusal({
        resources: {
          models: [
            { id: 'm', provider: 'scripted', model: 'x', maxRetires: 2 },
            { id: 'ok', provider: 'scripted', model: 'y' },
          ],
          mcpServers: [{ id: 'gh', command: 'gh-mcp', tools: { alow: ['search'] } }],
        },
        bindings: [
          { id: 'a', runner: 'echo', grants: { modles: ['ok'], fs: 'write' }, config: { delayMs: 'slow', prefx: '>' } },
          { id: 'b', runner: 'ecko', route: { conversation: { tpye: 'group' } } },
          {
            id: 'c',
            runner: 'echo',
            grants: { models: ['ok', 'mm', 'missing-entirely'], mcpServers: [{ id: 'gh', tols: ['x'] }] },
          },
          { id: 'c', runner: 'echo', route: { bot: 'other' }, readPaths: ['relative'] },
        ],
      });
      const lines = error.message.split('\n');
      expect(lines).toEqual(error.data.problems.map((p) => `paddock.yaml: ${p.field}: ${p.message}`));
      expect(error.data.problems.every((p) => p.file === 'paddock.yaml')).toBe(true);
      expect(new Set(lines).size).toBe(lines.length);
      expect(lines.sort()).toEqual(
        [
          'paddock.yaml: resources.models[0]: Unrecognized key: "maxRetires"; did you mean "maxRetries"?',
          'paddock.yaml: resources.mcpServers[0].tools: Unrecognized key: "alow"; did you mean "allow"?',
          'paddock.yaml: bindings[0].grants: Unrecognized key: "modles"; did you mean "models"?',
          'paddock.yaml: bindings[0].grants.fs: Invalid option: expected one of "none"|"read"|"readwrite"',
          'paddock.yaml: bindings[1].route.conversation: Unrecognized key: "tpye"; did you mean "type"?',
          // A union member (a grant is an id or {id, tools}): the problem of the branch the value came closest to.
          'paddock.yaml: bindings[2].grants.mcpServers[0]: Unrecognized key: "tols"; did you mean "tools"?',
          'paddock.yaml: bindings[3].readPaths[0]: must be an absolute path',
        ].sort(),
      );
      // The items that failed to parse hide nothing else: those that parsed are checked further.
      const refusal2 = refusal({
        resources: {
          models: [
            { id: 'm', provider: 'scripted', model: 'x', maxRetires: 2 },
            { id: 'ok', provider: 'scripted', model: 'y' },
          ],
        },
        bindings: [
          {
            id: 'a',
            runner: 'echo',
            config: { delayMs: 'slow', prefx: '>' },
            grants: { models: ['m', 'ok', 'mo', 'missing-entirely'] },
          },
          { id: 'b', runner: 'ecko' },
          { id: 'a', runner: 'echo', route: { bot: 'x' } },
          { id: 'bad!', runner: 'echo' },
          { id: 'bad!', runner: 'echo' },
        ],
      });
      expect(refusal2.data.problems.map((p) => `${p.field}: ${p.message}`)).toEqual([
        'resources.models[0]: Unrecognized key: "maxRetires"; did you mean "maxRetries"?',
        expect.stringMatching(/^bindings\[3\]\.id: /),
        expect.stringMatching(/^bindings\[4\]\.id: /),
        'bindings[0].config.prefx: is not allowed by the runner\'s config schema; did you mean "prefix"?',
        'bindings[0].config.delayMs: must be integer',
        // "m" failed to parse but exists: no second, misleading "no models resource" for it.
        'bindings[0].grants.models[2]: no models resource "mo"; did you mean "m"?',
        'bindings[0].grants.models[3]: no models resource "missing-entirely"',
        'bindings[1].runner: no runner "ecko"; did you mean "echo"? (see paddock runners list)',
        'bindings[2].id: duplicate id "a"',
        'bindings[0].route: binding "a" has the same route as "b"; one event could not choose between them',
      ]);
    },
  );

  it('reports every inline secret, and one problem (the secret) at a field that is also the wrong shape', () => {
    const error = refusal({
      resources: { models: [{ id: 'm', provider: 'anthropic', model: 'x', apiKey: 'abc123' }] },
      bindings: [
        { id: 'b', runner: 'echo', config: { prefix: 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz', token: 'x' } },
      ],
    });
    expect(error.data.problems.map((p) => p.field)).toEqual([
      'resources.models[0].apiKey',
      'bindings[0].config.prefix',
      'bindings[0].config.token',
    ]);
    expect(error.data.problems.every((p) => p.message.startsWith('apparent inline secret'))).toBe(true);
    expect(error.message).not.toMatch(/abc123|sk-ant/);
  });

  it('a file that is not a mapping, or has unknown top-level keys, says so with a did-you-mean', () => {
    expect(refusal(['x']).message).toMatch(/^paddock\.yaml: \(root\): Invalid input: expected object/);
    expect(refusal({ binding: [], resources: { model: [] } }).data.problems.map((p) => p.message)).toEqual(
      [
        'Unrecognized key: "model"; did you mean "models"?',
        'Unrecognized key: "binding"; did you mean "bindings"?',
      ].sort((a, b) => (a.includes('model"') ? -1 : b.includes('model"') ? 1 : 0)),
    );
  });

  it('did-you-mean: transpositions are one edit; far-off words get no guess', () => {
    expect(editDistance('modles', 'models')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(didYouMean('Models', ['models', 'mounts'])).toBe('models');
    expect(didYouMean('colour', ['delayMs', 'prefix'])).toBeUndefined();
    expect(didYouMean('x', [])).toBeUndefined();
    // The three-row table agrees with the definition on a spread of pairs (transpositions included).
    expect(editDistance('ca', 'abc')).toBe(3);
    expect(editDistance('abcdef', 'badcfe')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('abc', '')).toBe(3);
  });

  it('did-you-mean has a bounded cost: no guess past 64 characters, none for a pair whose lengths are too far', () => {
    const long = 'b'.repeat(SUGGEST_MAX_CHARS);
    expect(didYouMean(`${long}x`, [long])).toBeUndefined(); // one edit, but too long to guess for
    expect(didYouMean(long.slice(1), [long])).toBe(long); // at the bound, still a guess
    expect(didYouMean('b', [long])).toBeUndefined();
    // Among more than SUGGEST_MAX_NAMES names, no guess (the near one is there); each comparison stops at its limit.
    const many = [...Array.from({ length: SUGGEST_MAX_NAMES }, (_, i) => `name${i}`), 'models'];
    expect(didYouMean('modles', many)).toBeUndefined();
    expect(didYouMean('modles', many.slice(1))).toBe('models');
    expect(editDistance('abcdef', 'ghijkl', 2)).toBe(3);
    expect(editDistance('abcdef', 'abcdeg', 2)).toBe(1);
  });

  it('a config with megabyte-long unknown keys is refused with every key clipped (fourth attack: 60 s stall)', () => {
    const huge = Object.fromEntries(
      Array.from({ length: 100 }, (_, i): [string, number] => [`k${i}${'a'.repeat(10_000)}`, 1]).concat([
        ['z'.repeat(900_000), 1],
      ]),
    );
    const error = refusal({
      bindings: [{ id: 'lk', runner: 'echo', route: { platform: 'telegram', bot: 'lk' }, ...huge }],
    });
    const { problems } = error.data;
    expect(problems).toHaveLength(101);
    for (const p of problems) {
      expect(p.message.length + p.field.length).toBeLessThan(400);
      expect(p.message).toMatch(/^Unrecognized key: "[kz]\d*a*z*…\(\d+ more characters\)"$/);
    }
    // Runner config keys are clipped the same way (ajv's additionalProperties, through the runner's schema).
    const runnerConfig = refusal({
      bindings: [
        { id: 'e', runner: 'echo', route: { platform: 'telegram', bot: 'e' }, config: { ['q'.repeat(50_000)]: 1 } },
      ],
    });
    expect(runnerConfig.data.problems[0]!.field.length).toBeLessThan(300);
  });
});

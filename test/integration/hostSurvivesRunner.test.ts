import { afterAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../sdk/protocol/errorCodes.js';
import { MAX_JSON_DEPTH } from '../../sdk/transport/jsonDepth.js';
import { jsonLines, paddock } from '../helpers/cli.js';
import type { ChatEventInput } from '../../sdk/protocol/types.js';
import { chatEvent as anyChatEvent, tempHost } from '../helpers/host.js';

/** A chat event typed for the run service (the helper's is loosely typed for dispatch). */
const chatEvent = (over: Parameters<typeof anyChatEvent>[0]) => anyChatEvent(over) as ChatEventInput;
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rawDb } from '../helpers/rawDb.js';

// Issue 11, item 5: a runner's deeply nested (or huge) JSON fails that run with a clear reason;
// the host records the outcome, a concurrent run completes, and the host goes on.

type Where = 'log' | 'message' | 'tool' | 'output' | 'external' | 'usage' | 'request';
type Shape = 'array' | 'object' | 'mixed' | 'wide' | 'string';

const event = (text: string) => chatEvent({ text, conversation: { id: `c-${text}` } });
const LIMIT_REASON = `nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects (protocol limit maxJsonDepth)`;

describe('a runner sending nested JSON never stops the host (host API, concurrent runs)', () => {
  // Two runners start at once for every case; on a machine shared by parallel suites a cold start can
  // take longer than the default 10 s handshake, which is load, not what these tests are about.
  const h = tempHost({ limits: { handshakeTimeoutMs: 60_000 } });
  afterAll(() => h.close());

  /** One hostile run next to an ordinary one; both outcomes come back and both are stored. */
  async function hostileNextToNormal(where: Where, shape: Shape, depth: number) {
    const [hostile, normal] = await Promise.all([
      h.runs.runAdHoc({
        runner: 'sends-deep-json',
        event: event(`${where}-${shape}-${depth}`),
        config: { where, shape, depth },
      }),
      h.runs.runAdHoc({ runner: 'echo', event: event(`normal-${where}-${shape}-${depth}`), config: { delayMs: 300 } }),
    ]);
    expect(normal.status, normal.reason).toBe('completed');
    for (const outcome of [hostile, normal]) {
      const row = h.store.run(outcome.runId);
      expect(row?.status, `${where} ${shape} ${depth}: stored outcome`).toBe(outcome.status);
      expect(row?.reason).toBe(outcome.reason);
    }
    return hostile;
  }

  const places: Where[] = ['log', 'message', 'tool', 'output', 'external', 'usage'];
  // Every place gets two depths and shapes; together they cover just over SQLite's limit (1001),
  // just under it (999), 1100, 100k and a million levels, arrays, objects and both mixed.
  const deep: [Where, Shape, number][] = [
    ['log', 'array', 1100],
    ['log', 'mixed', 1_000_000],
    ['message', 'object', 1001],
    ['message', 'array', 100_000],
    ['tool', 'array', 999],
    ['tool', 'object', 100_000],
    ['output', 'mixed', 1100],
    ['output', 'array', 1_000_000],
    ['external', 'object', 999],
    ['external', 'mixed', 100_000],
    ['usage', 'array', 1001],
    ['usage', 'object', 500_000], // a million object levels is a line over maxLineBytes: quota_exceeded, another limit
  ];

  it.each(deep)('%s nesting %s × %i → protocol_error naming the limit', async (where, shape, depth) => {
    const outcome = await hostileNextToNormal(where, shape, depth);
    expect(outcome.status).toBe('protocol_error');
    expect(outcome.detail.code).toBe(ErrorCodes.InvalidMessage);
    expect(outcome.reason).toContain(LIMIT_REASON);
    expect(outcome.reason).toMatch(
      where === 'output' || where === 'external' || where === 'usage'
        ? /the answer to request \d+/
        : /a run\/update notification/,
    );
  });

  it.each([
    ['object', 1100],
    ['array', 1_000_000],
  ] as const)(
    'a state/set request nesting %s × %i is refused with QuotaExceeded (maxJsonDepth); the run goes on and completes',
    async (shape, depth) => {
      const outcome = await hostileNextToNormal('request', shape, depth);
      expect(outcome.status, outcome.reason).toBe('completed');
      const answer = JSON.parse((outcome.result!.output!.parts[0] as { text: string }).text) as {
        error: { code: number; data: unknown };
      };
      expect(answer.error).toMatchObject({
        code: ErrorCodes.QuotaExceeded,
        data: { limit: 'maxJsonDepth', maxDepth: MAX_JSON_DEPTH },
      });
      // The refusal is recorded like any other refused request, with who denied it.
      const events = h.store
        .readEvents(h.store.run(outcome.runId)!.sessionId)
        .filter((e) => e.runId === outcome.runId && e.type === 'run.request');
      expect(events.map((e) => e.data)).toEqual([
        {
          method: 'state/set',
          decision: { code: ErrorCodes.QuotaExceeded, reason: `state/set: the request ${LIMIT_REASON}` },
        },
      ]);
    },
  );

  const legitimate: [Where, Shape, number][] = places.map((where, i) => [
    where,
    (['array', 'wide', 'string'] as const)[i % 3]!,
    [MAX_JSON_DEPTH - 8, 20_000, 3_000_000][i % 3]!,
  ]);
  it.each(legitimate)(
    '%s: %s × %i (legitimate: under the depth limit, wide, long) is stored and the run completes',
    async (where, shape, depth) => {
      const outcome = await hostileNextToNormal(where, shape, depth);
      expect(outcome.status, outcome.reason).toBe('completed');
      const stored = h.store.readEvents(h.store.run(outcome.runId)!.sessionId).filter((e) => e.runId === outcome.runId);
      const text = JSON.stringify(stored);
      expect(text.length).toBeGreaterThan(shape === 'string' ? 3_000_000 : shape === 'wide' ? 300_000 : 100);
    },
  );
});

describe('an exception while storing what a runner sent fails that run only', () => {
  const h = tempHost();
  afterAll(() => h.close());
  // A real SQLite failure, planted: a trigger refuses one event the way a CHECK (json_valid), a
  // full disk or any other store error would. It stands in for the failures the protocol checks
  // now keep out, so the guards behind them stay proven.
  const plant = (type: string) =>
    rawDb(h.store).exec(
      `CREATE TRIGGER poison BEFORE INSERT ON events WHEN NEW.type = '${type}' AND NEW.data LIKE ` +
        `'%poison-pill%' BEGIN SELECT RAISE(ABORT, 'planted failure'); END`,
    );
  const unplant = () => rawDb(h.store).exec('DROP TRIGGER IF EXISTS poison');

  it(
    'an update the store refuses at group-commit time fails its run (failed, with the error); the other updates ' +
      'and a concurrent run are stored',
    async () => {
      plant('run.update');
      try {
        const [hostile, normal] = await Promise.all([
          h.runs.runAdHoc({
            runner: 'echo',
            event: chatEvent({ text: 'one poison-pill three', conversation: { id: 'p1' } }),
            config: { delayMs: 150 },
          }),
          h.runs.runAdHoc({
            runner: 'echo',
            event: chatEvent({ text: 'all fine here', conversation: { id: 'p2' } }),
            config: { delayMs: 150 },
          }),
        ]);
        expect(normal.status, normal.reason).toBe('completed');
        expect(hostile.status).toBe('failed');
        // The refused event is the message text holding the pill: stored while the run goes on, or (the
        // redactor holds a message's tail back until its end) right after the result — failed either way.
        expect(hostile.reason).toMatch(
          new RegExp(
            String.raw`(^|; then the )host failed while handling the runner output: Error: storing its ` +
              String.raw`run\.update event failed: SqliteError: planted failure$`,
          ),
        );
        expect(h.store.run(hostile.runId)).toMatchObject({ status: 'failed', reason: hostile.reason });
        const stored = h.store
          .readEvents(h.store.run(hostile.runId)!.sessionId)
          .filter((e) => e.runId === hostile.runId && e.type === 'run.update');
        const texts = stored.map((e) => {
          const { update } = e.data as { update: { kind: string; text?: string } };
          return update.text ?? update.kind;
        });
        expect(texts[0]).toBe('progress');
        expect(texts.join('')).not.toContain('poison-pill');
      } finally {
        unplant();
      }
    },
  );

  it('a result the store refuses still ends the run, recorded as failed without the result', async () => {
    plant('run.ended');
    try {
      const outcome = await h.runs.runAdHoc({
        runner: 'echo',
        event: chatEvent({ text: 'poison-pill', conversation: { id: 'p3' } }),
      });
      expect(outcome.status).toBe('failed');
      expect(outcome.result).toBeUndefined();
      expect(outcome.reason).toBe(
        "runner completed the run; the host could not store the runner's result: SqliteError: planted failure",
      );
      expect(h.store.run(outcome.runId)).toMatchObject({ status: 'failed', reason: outcome.reason });
    } finally {
      unplant();
    }
  });
});

describe('the real CLI survives nested runner messages', () => {
  it('paddock run prints the protocol_error outcome and exits 5; paddock runs show works afterwards', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'paddock-nest-cli-'));
    for (const config of [
      { where: 'log', shape: 'array', depth: 1100 },
      { where: 'tool', shape: 'mixed', depth: 1_000_000 },
      { where: 'output', shape: 'object', depth: 100_000 },
    ]) {
      const r = await paddock(
        [
          'run',
          '--runner',
          'test/fixtures/runnerDirs/sends-deep-json',
          '--text',
          'x',
          '--config',
          JSON.stringify(config),
          '--json',
        ],
        { dataDir },
      );
      expect(r.stderr).not.toMatch(/SqliteError|RangeError|Maximum call stack/);
      expect(r.exitCode, r.stderr).toBe(5);
      const outcome = jsonLines(r.stdout).find((l) => l.type === 'outcome')!.outcome as {
        runId: string;
        status: string;
        reason: string;
      };
      expect(outcome.status).toBe('protocol_error');
      expect(outcome.reason).toContain(LIMIT_REASON);
      const show = await paddock(['runs', 'show', outcome.runId, '--json'], { dataDir });
      expect(show.exitCode, show.stderr).toBe(0);
      expect((JSON.parse(show.stdout) as { run: { status: string; reason: string } }).run).toMatchObject({
        status: 'protocol_error',
        reason: outcome.reason,
      });
    }
  }, 300_000); // six CLI processes, each starting a host and bundling the runner (~10 s each on a loaded machine)
});

// A secret a runner streams split across message.delta updates (at every cut, across two and three
// deltas, as is and base64'd) and stores in runner state, through the real CLI and a real runner
// process: it must be in no form in the human view, the --json stream, the stored events (each
// delta and their concatenation), the transcript, or any byte of the database files.
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { base64Core } from '../../host/secrets/secretForms.js';
import { jsonLines, paddock } from '../helpers/cli.js';

const CANARY = `canary-stream-${process.pid}-Yt4Kd8Qm`;
const ENV = { PADDOCK_TEST_LEAKED_API_KEY: CANARY }; // named like a credential: the CLI host registers it
const LEAKER = 'test/fixtures/runnerDirs/leaks-secret';
const NEEDLES = [
  CANARY,
  Buffer.from(CANARY).toString('hex'),
  ...[0, 1, 2].map((r) => base64Core(Buffer.from(CANARY), r)),
];
const leaksIn = (text: string) => NEEDLES.filter((n) => text.includes(n));

type Message = { form: 'plain' | 'base64'; pad: number; cuts: number[] };
/** The same text the fixture builds. */
const textOf = (m: Omit<Message, 'cuts'>) =>
  `${'.'.repeat(m.pad)}${m.form === 'plain' ? CANARY : Buffer.from(`KEY=${CANARY}`).toString('base64')} end`;

/** Every cut inside the secret's written form across two deltas; a spread of cut pairs across three. */
function messages(): Message[] {
  const out: Message[] = [];
  for (const form of ['plain', 'base64'] as const) {
    for (const pad of [0, 230]) {
      const start = pad;
      const end = textOf({ form, pad }).length - 4;
      for (let c = start + 1; c < end; c++) out.push({ form, pad, cuts: [c] });
      for (let a = start + 1; a < end - 1; a += 3)
        for (let b = a + 1; b < end; b += 5) out.push({ form, pad, cuts: [a, b] });
    }
  }
  return out;
}

describe('a secret split across message deltas stays redacted in every view', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-stream-secrets-'));
  const plan = messages();
  let human = '';
  let json = '';
  let sessions: string[] = [];

  beforeAll(async () => {
    const config = JSON.stringify({ messages: plan });
    const h = await paddock(['run', '--runner', LEAKER, '--text', CANARY, '--config', config], { dataDir, env: ENV });
    expect(h.exitCode, h.stderr).toBe(0);
    human = h.stdout;
    const j = await paddock(['run', '--runner', LEAKER, '--text', CANARY, '--config', config, '--json'], {
      dataDir,
      env: ENV,
    });
    expect(j.exitCode, j.stderr).toBe(0);
    json = j.stdout;
    sessions = [
      /session (\S+)/.exec(human)![1]!,
      (jsonLines(json).find((l) => l.type === 'started') as unknown as { sessionId: string }).sessionId,
    ];
  }, 120_000);

  it('the runner really streamed the secret in pieces (the attack is real)', () => {
    expect(plan.length).toBeGreaterThan(200);
    const updates = jsonLines(json)
      .filter((l) => l.type === 'update')
      .map((l) => (l as unknown as { update: { kind: string; text?: string; messageId?: string } }).update);
    expect(updates.filter((u) => u.kind === 'message.delta').length).toBeGreaterThanOrEqual(
      plan.reduce((n, m) => n + m.cuts.length + 1, 0),
    );
  });

  it('the human view holds no form of the secret, and shows the marker for every message', () => {
    expect(leaksIn(human)).toEqual([]);
    expect(human.split('[REDACTED]').length - 1).toBe(plan.length);
  });

  it('the --json stream: no delta, and no concatenation (per message or all in order), holds the secret', () => {
    const deltas = jsonLines(json)
      .filter((l) => l.type === 'update')
      .map((l) => (l as unknown as { update: { kind: string; text?: string; messageId?: string } }).update)
      .filter((u) => u.kind === 'message.delta');
    expect(leaksIn(deltas.map((d) => d.text).join(''))).toEqual([]);
    plan.forEach((m, i) => {
      const text = deltas
        .filter((d) => d.messageId === `m${i}`)
        .map((d) => d.text)
        .join('');
      expect(leaksIn(text), JSON.stringify(m)).toEqual([]);
      if (m.form === 'plain') expect(text).toBe(`${'.'.repeat(m.pad)}[REDACTED] end`);
      else expect(text).toMatch(/^\.*S0VZPW\[REDACTED\]\w{0,2}=* end$/);
    });
  });

  it('the stored events, each and concatenated, and the transcript hold no form of the secret', async () => {
    const db = new Database(join(dataDir, 'paddock.db'), { readonly: true });
    try {
      for (const sessionId of sessions) {
        const rows = db
          .prepare("SELECT data FROM events WHERE session_id = ? AND type = 'run.update' ORDER BY seq")
          .all(sessionId) as { data: string }[];
        const deltas = rows
          .map((r) => (JSON.parse(r.data) as { update: { kind: string; text?: string; messageId?: string } }).update)
          .filter((u) => u.kind === 'message.delta');
        expect(deltas.length).toBeGreaterThan(plan.length);
        expect(leaksIn(deltas.map((d) => d.text).join(''))).toEqual([]);
        plan.forEach((_, i) =>
          expect(
            leaksIn(
              deltas
                .filter((d) => d.messageId === `m${i}`)
                .map((d) => d.text)
                .join(''),
            ),
          ).toEqual([]),
        );
      }
    } finally {
      db.close();
    }
    for (const sessionId of sessions) {
      for (const flags of [[], ['--json']]) {
        const shown = await paddock(['sessions', 'show', sessionId, ...flags], { dataDir, env: ENV });
        expect(shown.exitCode, shown.stderr).toBe(0);
        expect(leaksIn(shown.stdout)).toEqual([]);
        expect(shown.stdout.split('[REDACTED]').length - 1).toBeGreaterThanOrEqual(plan.length);
      }
    }
  });

  it(
    'runner state: the secret stored as a value (plain, nested, base64, hex) and as a key name is stored ' +
      'redacted; state/get reads back the redacted value',
    async () => {
      const r = await paddock(
        ['run', '--runner', LEAKER, '--text', CANARY, '--config', JSON.stringify({ state: true }), '--json'],
        { dataDir, env: ENV },
      );
      expect(r.exitCode, r.stderr).toBe(0);
      const outcome = jsonLines(r.stdout).find((l) => l.type === 'outcome') as unknown as {
        outcome: { result: { output: { parts: { text: string }[] } } };
      };
      const report = JSON.parse(outcome.outcome.result.output.parts[0]!.text) as Record<string, unknown>;
      expect(report).toEqual({
        plainFound: true,
        plainIsSecret: false,
        plainValue: '[REDACTED]',
        keyedFound: true,
        nestedHasSecret: false,
      });
      const db = new Database(join(dataDir, 'paddock.db'), { readonly: true });
      try {
        const rows = db.prepare('SELECT key, value FROM runner_state').all() as { key: string; value: string }[];
        expect(rows.map((row) => row.key).sort()).toEqual(['key-[REDACTED]', 'nested', 'plain']);
        expect(leaksIn(JSON.stringify(rows))).toEqual([]);
      } finally {
        db.close();
      }
    },
  );

  it('no byte of the database, its WAL or the audit export holds the secret in any form', async () => {
    const audit = await paddock(['audit', 'export'], { dataDir, env: ENV });
    expect(leaksIn(audit.stdout)).toEqual([]);
    const files = readdirSync(dataDir).filter((f) => f.startsWith('paddock.db'));
    expect(files).toContain('paddock.db');
    for (const file of files) expect(leaksIn(readFileSync(join(dataDir, file)).toString('latin1')), file).toEqual([]);
  });
});

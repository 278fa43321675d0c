// Option values the CLI parser takes (issue 12, finding 5) and the chat event size limit at intake
// (finding 9), through the real bin: every bad value is a usage error (exit 2) naming the option,
// never a stack trace, a Node warning or a value silently read as something else.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonLines, paddock } from '../helpers/cli.js';
import { FIXTURE_RUNNERS } from '../helpers/host.js';

/** A runner folder `runners test` accepts (the options are refused before it is read). */
const PROBING_RUNNER = join(FIXTURE_RUNNERS, 'tries-every-host-request');

const fresh = () => mkdtempSync(join(tmpdir(), 'paddock-options-'));
const RUN = ['run', '--runner', 'echo', '--text', 'hi'];
const MS_RULE = /must be a whole number of milliseconds from 1 to 2147483647 \(decimal digits only\)/;

/** A usage error: exit 2, the message names `option`, no stack trace, no Node warning. */
function expectUsageError(r: { exitCode?: number; stderr: string }, option: string, rule?: RegExp): void {
  expect(r.exitCode, r.stderr).toBe(2);
  expect(r.stderr).toContain(`paddock: ${option}`);
  if (rule) expect(r.stderr).toMatch(rule);
  expect(r.stderr).not.toMatch(/\n\s+at |RangeError|TypeError|Warning|wallClockMs/);
}

describe('numeric options are decimal digits within 1..2^31-1 ms', () => {
  it.each([
    ['99999999999999999999'],
    ['2147483648'],
    ['0x10'],
    ['1e3'],
    [' 5000'],
    ['5000 '],
    ['5000.0'],
    ['0'],
    ['+5'],
    ['٥٠٠٠'], // Arabic-Indic digits
    ['x'.repeat(5_000)],
  ])('run --timeout %# is a usage error naming --timeout', async (value) => {
    const r = await paddock([...RUN, `--timeout=${value}`], { dataDir: fresh() });
    expectUsageError(r, '--timeout', MS_RULE);
    // An echoed value is clipped.
    expect(r.stderr).not.toContain('x'.repeat(100));
  });

  it('runners test --step-timeout 2147483648 is a usage error, not a 1 ms timer', async () => {
    const r = await paddock(['runners', 'test', PROBING_RUNNER, '--step-timeout', '2147483648'], {
      dataDir: fresh(),
    });
    expectUsageError(r, '--step-timeout', MS_RULE);
  });

  it('the largest timer a run takes is accepted and the run completes', async () => {
    const r = await paddock([...RUN, '--timeout', '2147483647', '--json'], { dataDir: fresh() });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(jsonLines(r.stdout).at(-1)).toMatchObject({ type: 'outcome', outcome: { status: 'completed' } });
  });
});

describe('empty and repeated values', () => {
  it.each([['--timeout'], ['--sandbox'], ['--config'], ['--runner'], ['--conversation']])(
    '%s "" is a usage error, not the default',
    async (option) => {
      const r = await paddock([...RUN.filter((_, i) => i < 1 || i > 2 || option !== '--runner'), option, ''], {
        dataDir: fresh(),
      });
      expectUsageError(r, option, /needs a value, got an empty one/);
    },
  );

  it.each([
    [['--sandbox', 'bwrap', '--sandbox', 'process'], '--sandbox'],
    [['--timeout', '5000', '--timeout=1'], '--timeout'],
    [['--runner', 'echo'], '--runner'],
    [['--data-dir', '/tmp', '--data-dir', '/tmp'], '--data-dir'],
  ])('%j: a single-valued option given twice is a usage error naming it', async (extra, option) => {
    const r = await paddock([...RUN, ...extra], { dataDir: fresh() });
    expectUsageError(r, option, /is given more than once/);
  });

  it('a repeatable option (--runner-dir) may still be given twice', async () => {
    const r = await paddock([...RUN, '--runner-dir', fresh(), '--runner-dir', fresh(), '--json'], { dataDir: fresh() });
    expect(r.exitCode, r.stderr).toBe(0);
  });
});

describe('JSON option values are bounded', () => {
  const deep = (n: number) => `{"a":${'['.repeat(n)}${']'.repeat(n)}}`;
  it.each([
    ['run', [...RUN, '--config', deep(5_000)]],
    ['runners test --config', ['runners', 'test', PROBING_RUNNER, '--config', deep(5_000)]],
    ['runners test --slow-config', ['runners', 'test', PROBING_RUNNER, '--slow-config', deep(100)]],
  ])('%s: a 5,000-deep (or 100-deep) value is a usage error naming the option', async (_name, args) => {
    const r = await paddock(args, { dataDir: fresh() });
    const option = args[args.length - 2]!;
    expectUsageError(r, option, /nests deeper than 64 levels/);
  });

  it('a value 64 levels deep (the protocol limit) is accepted', async () => {
    // The object and 63 arrays: 64 levels.
    const r = await paddock([...RUN, '--config', `{"a":${'['.repeat(63)}${']'.repeat(63)}}`, '--json'], {
      dataDir: fresh(),
    });
    // Past the option parser: the run happens (echo's own config schema decides what it thinks of "a").
    expect(r.stderr).not.toMatch(/nests deeper|paddock: --config/);
    expect(jsonLines(r.stdout).at(-1)).toMatchObject({ type: 'outcome' });
  });
});

describe('chat event size limit at intake (limits.maxChatEventBytes, default 1 MiB)', () => {
  const LIMIT = 1024 * 1024;
  /** An event whose JSON is exactly `bytes` long (multi-byte text: the limit counts bytes, not characters). */
  function eventOf(bytes: number): string {
    const base = {
      id: `big-${bytes}`,
      platform: 'telegram',
      bot: 'support',
      conversation: { type: 'group', id: '-100' },
      sender: { id: '1', name: 'Ada' },
      message: { parts: [{ type: 'text', text: '' }] },
      receivedAt: '2026-11-30T17:00:00Z',
    };
    const empty = Buffer.byteLength(JSON.stringify(base));
    const room = bytes - empty;
    const text = 'é'.repeat(Math.floor(room / 2)) + 'a'.repeat(room % 2);
    const json = JSON.stringify({ ...base, message: { parts: [{ type: 'text', text }] } });
    expect(Buffer.byteLength(json)).toBe(bytes);
    return json;
  }

  it.each([
    [LIMIT, 0],
    [LIMIT + 1, 2],
    [30 * LIMIT, 2],
  ])(
    'dispatch of a %d-byte event: exit %d; a refused one names the limit and its size and stores nothing',
    async (bytes, code) => {
      const dir = fresh();
      writeFileSync(
        join(dir, 'p.yaml'),
        'bindings:\n  - id: b-echo\n    runner: echo\n    route: { platform: telegram, bot: support }\n' +
          '    sandbox: process\n    allowDegrade: true\n',
      );
      expect((await paddock(['apply', '-f', join(dir, 'p.yaml')], { dataDir: dir })).exitCode).toBe(0);
      writeFileSync(join(dir, 'event.json'), eventOf(bytes));
      const r = await paddock(['dispatch', '-f', join(dir, 'event.json')], { dataDir: dir });
      expect(r.exitCode, r.stderr).toBe(code);
      const runs = await paddock(['runs', 'list', '--json'], { dataDir: dir });
      if (code === 0) {
        expect(runs.stdout).toContain('b-echo');
        return;
      }
      expect(r.stdout + r.stderr).toContain(
        `event is ${bytes} bytes; the host takes at most ${LIMIT} bytes (limits.maxChatEventBytes)`,
      );
      expect(runs.stdout).not.toContain('b-echo');
      const audit = await paddock(['audit', 'export'], { dataDir: dir });
      expect(audit.stdout).toContain('event_too_large');
      expect(audit.stdout.length).toBeLessThan(100_000);
    },
  );
});

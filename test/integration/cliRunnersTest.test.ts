// `paddock runners test <dir>`: the conformance suite against a runner folder, started from its
// runner.json as the host starts it — a TypeScript node entry, or any command (no TypeScript).
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileNodeEntry } from '../../host/plugins/compileEntry.js';
import { paddock } from '../helpers/cli.js';
import { repoPath } from '../helpers/fixtures.js';

const home = mkdtempSync(join(tmpdir(), 'paddock-runners-test-'));
const SLOW_ECHO = [
  '--slow-text',
  'one two three four five six seven eight nine ten',
  '--slow-config',
  '{"delayMs":150}',
];

interface Report {
  runner: { id: string; version: string };
  command: string[];
  passed: boolean;
  checks: {
    name: string;
    ok: boolean;
    detail?: string;
    stderrTail?: string;
    ended?: { code: number | null; signal: string | null; startError?: string };
  }[];
  failures: string[];
}

/** A runner folder whose entry is a plain command line (here node on a prebuilt .mjs: no TypeScript anywhere). */
function commandRunner(
  id: string,
  entry: { command: string; args: string[] },
  extra: Record<string, unknown> = {},
): string {
  const dir = join(home, id);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'runner.json'),
    JSON.stringify({ id, name: id, version: '1.2.3', protocolVersion: 1, entry, ...extra }),
  );
  return dir;
}

/** Live processes whose environment holds `name=value`. */
function processesWithEnv(name: string, value: string): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`${name}=${value}`);
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe('paddock runners test', () => {
  it(
    'passes for the built-in echo runner (TypeScript entry) and for a runner started by its command line; exit ' + '0',
    async () => {
      const echo = await paddock(['runners', 'test', 'runners/echo', ...SLOW_ECHO], { dataDir: home });
      expect(echo.exitCode, echo.stdout + echo.stderr).toBe(0);
      expect(echo.stdout).toMatch(/^conformance of runner echo 0\.1\.0 /);
      expect(echo.stdout).toMatch(/\n {2}ok {3}cancel: run\/cancel mid-run ends the run with status cancelled/);
      expect(echo.stdout.trimEnd().split('\n').at(-1)).toBe('8/8 checks passed');

      // A folder outside the package whose entry is `command + args`: the bundled echo, run by node, from {runnerDir}.
      const dir = commandRunner(
        'plain-echo',
        { command: process.execPath, args: ['{runnerDir}/runner.mjs'] },
        { configSchema: { type: 'object', properties: { delayMs: { type: 'integer', default: 0 } } } },
      );
      copyFileSync(await compileNodeEntry(repoPath('runners/echo/index.ts')), join(dir, 'runner.mjs'));
      const plain = await paddock(['runners', 'test', dir, ...SLOW_ECHO, '--json'], { dataDir: home });
      expect(plain.exitCode, plain.stdout + plain.stderr).toBe(0);
      const report = JSON.parse(plain.stdout) as Report;
      expect(report).toMatchObject({
        runner: { id: 'plain-echo', version: '1.2.3' },
        command: [process.execPath, join(dir, 'runner.mjs')],
        passed: true,
        failures: [],
      });
      expect(report.checks.length).toBeGreaterThanOrEqual(8);
    },
    300_000,
  );

  it('fails with exit 1, naming each failed check with why, how the runner ended and its stderr', async () => {
    const crashes = await paddock(
      ['runners', 'test', 'test/fixtures/runnerDirs/crashes', '--step-timeout', '5000', '--json'],
      { dataDir: home },
    );
    expect(crashes.exitCode).toBe(1);
    const report = JSON.parse(crashes.stdout) as Report;
    expect(report.passed).toBe(false);
    const run = report.checks.find((c) => c.name.startsWith('run: a sample run completes'))!;
    expect(run).toMatchObject({ ok: false, ended: { code: 7, signal: null } });
    expect(run.detail).toMatch(/runner output ended$/);
    expect(run.stderrTail).toContain('segfault imminent (fixture)');
    expect(report.failures.length).toBe(report.checks.filter((c) => !c.ok).length);

    const human = await paddock(['runners', 'test', 'test/fixtures/runnerDirs/crashes', '--step-timeout', '5000'], {
      dataDir: home,
    });
    expect(human.exitCode).toBe(1);
    expect(human.stdout).toMatch(
      new RegExp(
        String.raw` {2}FAIL run: a sample run completes.*\n {7}why: .*runner output ended\n {7}runn` +
          String.raw`er process: exited with code 7\n {7}runner stderr \(tail\):\n {9}segfault immine` +
          String.raw`nt \(fixture\)`,
      ),
    );
    expect(human.stdout).toMatch(/\n\d\/8 checks passed — FAILED$/);

    // A runner that cannot start at all: every check fails, each saying why.
    const missing = commandRunner('no-python', {
      command: join(home, 'no-such-interpreter'),
      args: ['{runnerDir}/main.py'],
    });
    const broken = await paddock(['runners', 'test', missing, '--json'], { dataDir: home });
    expect(broken.exitCode).toBe(1);
    const brokenReport = JSON.parse(broken.stdout) as Report;
    expect(brokenReport.checks.filter((c) => c.ok)).toEqual([]);
    expect(brokenReport.checks[0]!.ended).toEqual({
      code: null,
      signal: null,
      startError: `spawn ${join(home, 'no-such-interpreter')} ENOENT`,
    });
    const brokenHuman = await paddock(['runners', 'test', missing], { dataDir: home });
    expect(brokenHuman.stdout).toContain(
      `\n       runner process: could not start: spawn ${join(home, 'no-such-interpreter')} ENOENT\n`,
    );
  }, 300_000);

  it(
    'a folder without a valid runner.json, or a config its schema refuses, is a usage error (exit 2) naming the ' +
      'file and field',
    async () => {
      const manifest = await paddock(['runners', 'test', 'test/fixtures/runnerDirs/broken-manifest'], {
        dataDir: home,
      });
      expect(manifest.exitCode).toBe(2);
      expect(manifest.stderr).toMatch(/^paddock: .*broken-manifest\/runner\.json: field entry/);
      const none = await paddock(['runners', 'test', home], { dataDir: home });
      expect(none.exitCode).toBe(2);
      expect(none.stderr).toContain(`${join(home, 'runner.json')}: ENOENT`);
      const config = await paddock(['runners', 'test', 'runners/echo', '--config', '{"delayMs":"soon"}'], {
        dataDir: home,
      });
      expect(config.exitCode).toBe(2);
      expect(config.stderr).toMatch(/^paddock: --config: delayMs: must be integer/);
      const notJson = await paddock(['runners', 'test', 'runners/echo', '--slow-config', '{nope'], { dataDir: home });
      expect([notJson.exitCode, notJson.stderr.split('\n')[0]]).toEqual([
        2,
        expect.stringMatching(/^paddock: --slow-config is not valid JSON/),
      ]);
    },
    60_000,
  );
  it('a setsid descendant holding the runner pipes: the command ends, fails that check, kills it', async () => {
    // The descendant leaves the process group the suite kills and keeps stdout and stderr open; the manifest's env
    // marks it (and only this test's) so the test can look for it afterwards.
    const mark = randomUUID();
    const dir = commandRunner(
      'leaves-setsid-daemon',
      { command: '/bin/sh', args: ['{runnerDir}/start.sh'] },
      { env: { LEAVES_SETSID_DAEMON_MARK: mark }, configSchema: { type: 'object' } },
    );
    writeFileSync(
      join(dir, 'start.sh'),
      `setsid sh -c 'exec sleep 100000' &\nexec python3 ${repoPath('examples/python-runner/runner.py')}\n`,
    );
    const r = await paddock(['runners', 'test', dir, '--json'], { dataDir: home });
    expect(r.exitCode, r.stdout + r.stderr).toBe(1);
    const report = JSON.parse(r.stdout) as Report;
    const leftover = report.checks.find((c) => c.name === 'leaves no process behind when stopped');
    expect(leftover?.ok).toBe(false);
    expect(leftover?.detail).toMatch(/^\d+ process\(es\) the runners started outlived them .*: killed$/);
    // The protocol checks themselves passed: only the leftovers fail the runner.
    expect(report.checks.filter((c) => !c.ok).map((c) => c.name)).toEqual(['leaves no process behind when stopped']);
    expect(processesWithEnv('LEAVES_SETSID_DAEMON_MARK', mark)).toEqual([]);
  }, 300_000);
});

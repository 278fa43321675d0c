import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunOutcome } from '../../host/process/outcome.js';
import { processesOfRun } from '../../host/process/runEnvScan.js';
import { liveGroupMembers } from '../../host/util/procIdentity.js';
import { jsonLines, paddock } from '../helpers/cli.js';

const dataDir = () => mkdtempSync(join(tmpdir(), 'paddock-cli-'));
const outcomeOf = (stdout: string) => jsonLines(stdout).find((l) => l.type === 'outcome')!.outcome as RunOutcome;

describe('paddock CLI (real process)', () => {
  it(
    'paddock demo runs the real Claude Code CLI in the sandbox ' + 'on the scripted model, says so, and exits 0',
    async () => {
      const home = dataDir();
      const r = await paddock(['demo'], { dataDir: home });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout).toMatch(
        new RegExp(
          String.raw`model: demo-scripted — paddock's SCRIPTED model \(deterministic, not a real LLM` +
            String.raw`\); harness: Claude Code 2\.1\.332`,
        ),
      );
      expect(r.stdout).toMatch(/isolation: bwrap backend \(strong\)/);
      expect(r.stdout).toContain('⚙ Bash — echo Hello from inside the paddock sandbox');
      expect(r.stdout).toContain('⚙ Bash ok'); // the finished call names its tool (issue 11, item 19c)
      expect(r.stdout).not.toMatch(/⚙ toolu_/);
      // The cost shown is the host's meter; Claude Code's own estimate is labelled (item 19b).
      expect(r.stdout).toMatch(
        new RegExp(
          String.raw`usage \(metered by the host gateway\): [1-9]\d* model call\(s\), \d+ input \+ \d` +
            String.raw`+ output tokens, \$0\.0000 · runner reported \(unverified\): \{.*"costUsd":0\.\d` +
            String.raw`+`,
        ),
      );
      expect(r.stdout).toContain(
        'Claude Code ran `echo` inside the bwrap sandbox and it printed: "Hello from inside the paddock sandbox"',
      );
      expect(r.stdout).toMatch(/✓ completed in \d+ ms — runner completed the run/);
      expect(readdirSync(join(home, 'workspaces'))).toEqual([]); // the run's workspace was cleaned
    },
  );

  it('the human view names the tool when a call finishes, never its opaque call id', async () => {
    const r = await paddock(
      ['run', '--runner', 'test/fixtures/runnerDirs/reports-tool-calls-out-of-order', '--text', 'x'],
      {
        dataDir: dataDir(),
      },
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const tools = r.stdout.split('\n').filter((l) => l.startsWith('⚙'));
    expect(tools).toEqual(['⚙ Bash — echo hi', '⚙ Read', '⚙ Read error: no such file', '⚙ Bash ok']);
    expect(r.stdout).not.toContain('OPAQUE');
  });

  it('paddock run --json streams NDJSON: started, updates in order, outcome', async () => {
    const r = await paddock(['run', '--runner', 'echo', '--text', 'one two', '--json'], { dataDir: dataDir() });
    expect(r.exitCode).toBe(0);
    const lines = jsonLines(r.stdout);
    expect(lines[0]).toMatchObject({
      type: 'started',
      runner: 'echo',
      isolation: { backend: 'process', strength: 'weak' },
    });
    // What is not enforced is said where the user sees the run.
    expect((lines[0]!.isolation as { notEnforced: string[] }).notEnforced.join('\n')).toMatch(
      /filesystem isolation.*\n.*network isolation/s,
    );
    // progress, "one ", "two", then the message's held-back end (redaction) as one more delta of update 3.
    const updates = lines.filter((l) => l.type === 'update') as unknown as {
      seq: number;
      update: { kind: string; text?: string };
    }[];
    expect(updates.map((l) => l.seq)).toEqual([1, 2, 3, 3]);
    expect(
      updates
        .filter((l) => l.update.kind === 'message.delta')
        .map((l) => l.update.text)
        .join(''),
    ).toBe('one two');
    expect(outcomeOf(r.stdout)).toMatchObject({ status: 'completed', survivors: [], termination: 'shutdown' });
  });

  it('exit code reflects the outcome: timed_out 124, crashed 4, failed 1', async () => {
    const timedOut = await paddock(
      ['run', '--runner', 'test/fixtures/runnerDirs/hangs', '--text', 'x', '--timeout', '800', '--json'],
      { dataDir: dataDir() },
    );
    expect(timedOut.exitCode).toBe(124);
    expect(outcomeOf(timedOut.stdout).detail).toEqual({ timeout: 'wall_clock' });
    const crashed = await paddock(['run', '--runner', 'test/fixtures/runnerDirs/crashes', '--text', 'x'], {
      dataDir: dataDir(),
    });
    expect(crashed.exitCode).toBe(4);
    expect(crashed.stdout).toMatch(/✗ crashed .* exited with code 7/);
    expect(crashed.stdout).toContain('segfault imminent (fixture)');
    const failed = await paddock(['run', '--runner', 'echo', '--text', 'x', '--config', '{"delayMs":"soon"}'], {
      dataDir: dataDir(),
    });
    expect(failed.exitCode).toBe(1);
    expect(failed.stdout).toMatch(/invalid runner config.*delayMs/s);
  });

  it('bad input gets a clear error and exit code 2', async () => {
    const broken = await paddock(['run', '--runner', 'test/fixtures/runnerDirs/broken-manifest', '--text', 'x'], {
      dataDir: dataDir(),
    });
    expect(broken.exitCode).toBe(2);
    expect(broken.stderr).toMatch(/broken-manifest\/runner\.json: field entry/);
    const noText = await paddock(['run', '--runner', 'echo'], { dataDir: dataDir() });
    expect(noText.exitCode).toBe(2);
    expect(noText.stderr).toContain('run needs --text');
    const badJson = await paddock(['run', '--runner', 'echo', '--text', 'x', '--config', '{nope'], {
      dataDir: dataDir(),
    });
    expect(badJson.exitCode).toBe(2);
    expect(badJson.stderr).toContain('--config is not valid JSON');
    const unknownFlag = await paddock(['run', '--runner', 'echo', '--text', 'x', '--frobnicate'], {
      dataDir: dataDir(),
    });
    expect(unknownFlag.exitCode).toBe(2);
    expect(unknownFlag.stderr).toMatch(/Unknown option '--frobnicate'/);
  });

  it('Ctrl-C cancels the run cleanly: cancelled outcome, exit 130, no runner process left', async () => {
    const words = Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ');
    const child = paddock(['run', '--runner', 'echo', '--text', words, '--config', '{"delayMs":100}', '--json'], {
      dataDir: dataDir(),
    });
    let sent = false;
    child.stdout!.on('data', (chunk: Buffer) => {
      if (!sent && chunk.toString().includes('message.delta')) {
        sent = true;
        child.kill('SIGINT');
      }
    });
    const r = await child;
    expect(r.exitCode).toBe(130);
    const outcome = outcomeOf(r.stdout);
    expect(outcome.status).toBe('cancelled');
    expect(outcome.reason).toBe('runner stopped on run/cancel');
    expect(outcome.result?.status).toBe('cancelled');
    expect(liveGroupMembers(outcome.pid!)).toEqual([]);
    expect(jsonLines(r.stdout).some((l) => l.type === 'note' && String(l.text).startsWith('cancelling'))).toBe(true);
  });

  it('a second Ctrl-C exits at once and the exit hook kills the runner group', async () => {
    const child = paddock(['run', '--runner', 'test/fixtures/runnerDirs/ignores-cancel', '--text', 'x', '--json'], {
      dataDir: dataDir(),
    });
    let whileRunning: number[] = [];
    // Two signals sent back to back can merge into one pending SIGINT in the kernel, so the
    // second press waits until the CLI has said it handled the first.
    let presses = 0;
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      out += text;
      if (presses === 0 && text.includes('"type":"update"')) {
        presses = 1;
        whileRunning = processesOfRun(/"runId":"([^"]+)"/.exec(out)![1]!);
        child.kill('SIGINT'); // cancel: this runner ignores it…
      }
      if (presses === 1 && text.includes('cancelling')) {
        presses = 2;
        child.kill('SIGINT'); // …so the user presses Ctrl-C again
      }
    });
    const r = await child;
    expect(presses).toBe(2);
    expect(r.exitCode).toBe(130);
    expect(jsonLines(r.stdout).some((l) => l.type === 'outcome')).toBe(false); // it did not wait for the grace
    const started = jsonLines(r.stdout).find((l) => l.type === 'started')!;
    expect(started).toBeDefined();
    // The runner (pid unknown to the CLI output) must be gone: no process of this run is left, found by the run id in
    // its environment (the same check found the runner while it ran). Not by command line: the runner is a bundle in
    // the data folder, and a needle for all runners matched other test files' runners on the machine.
    expect(whileRunning).not.toEqual([]);
    expect(processesOfRun(started.runId as string)).toEqual([]);
  });
});

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { Store } from '../../host/state/store.js';
import { jsonLines, paddock } from '../helpers/cli.js';

const dataDir = () => mkdtempSync(join(tmpdir(), 'paddock-cli-state-'));

describe('paddock runs / sessions / audit (real process)', () => {
  it('records runs: list, show, session transcript, resume pointers across runs', async () => {
    const home = dataDir();
    expect((await paddock(['run', '--runner', 'echo', '--text', 'first question'], { dataDir: home })).exitCode).toBe(
      0,
    );
    expect((await paddock(['run', '--runner', 'echo', '--text', 'second question'], { dataDir: home })).exitCode).toBe(
      0,
    );
    const list = await paddock(['runs', 'list', '--json'], { dataDir: home });
    const runs = JSON.parse(list.stdout) as { id: string; sessionId: string; status: string }[];
    expect(runs.map((r) => r.status)).toEqual(['completed', 'completed']);
    expect(new Set(runs.map((r) => r.sessionId)).size).toBe(1); // same conversation, same session
    const show = JSON.parse((await paddock(['runs', 'show', runs[0]!.id, '--json'], { dataDir: home })).stdout) as {
      events: { type: string }[];
    };
    expect(show.events.map((e) => e.type)).toEqual(
      expect.arrayContaining(['run.queued', 'run.started', 'run.update', 'run.ended']),
    );
    const session = await paddock(['sessions', 'show', runs[0]!.sessionId], { dataDir: home });
    expect(session.stdout).toMatch(
      /user\s+│ first question\nassistant │ first question\nuser\s+│ second question\nassistant │ second question/,
    );
    expect((await paddock(['runs', 'show', 'run_nope-0000'], { dataDir: home })).stderr).toContain(
      'no run run_nope-0000',
    );
    const resolveUnknown = await paddock(['runs', 'resolve', 'run_nope-0000', '--as', 'failed'], { dataDir: home });
    expect(resolveUnknown.exitCode).toBe(2);
    expect(resolveUnknown.stderr).toBe('paddock: no run run_nope-0000'); // one clear line, no stack trace
    const badDurability = await paddock(['runs', 'list', '--durability', 'eventual'], { dataDir: home });
    expect(badDurability.exitCode).toBe(2);
    expect(badDurability.stderr).toContain(
      '--durability (or PADDOCK_DURABILITY) must be normal or full, got "eventual"',
    );
    expect((await paddock(['runs', 'list', '--durability', 'full', '--json'], { dataDir: home })).exitCode).toBe(0);
  });

  it('runner state is host-owned: it persists across runs of a session and is isolated between sessions', async () => {
    const home = dataDir();
    const count = async (conversation: string) => {
      const r = await paddock(
        [
          'run',
          '--runner',
          'test/fixtures/runnerDirs/increments-state-counter',
          '--text',
          'x',
          '--conversation',
          conversation,
          '--json',
        ],
        { dataDir: home },
      );
      expect(r.exitCode, r.stderr).toBe(0);
      return (
        jsonLines(r.stdout).find((l) => l.type === 'outcome')!.outcome as {
          result: { output: { parts: { text: string }[] } };
        }
      ).result.output.parts[0]!.text;
    };
    expect(await count('alice')).toBe('count: 1');
    expect(await count('alice')).toBe('count: 2');
    expect(await count('bob')).toBe('count: 1');
    const db = new Database(join(home, 'paddock.db'), { readonly: true });
    const scopes = db.prepare('SELECT scope, value FROM runner_state ORDER BY value').all() as {
      scope: string;
      value: string;
    }[];
    db.close();
    expect(scopes.map((s) => s.value)).toEqual(['1', '2']);
    expect(scopes.every((s) => /^binding:adhoc-increments-state-counter\/session:ses_/.test(s.scope))).toBe(true);
  });

  it('saves external pointers only from runs that confirmed them, and hands them back in resume', async () => {
    const home = dataDir();
    const go = async (text: string) => {
      const r = await paddock(
        ['run', '--runner', 'test/fixtures/runnerDirs/echoes-resume-pointers', '--text', text, '--json'],
        {
          dataDir: home,
        },
      );
      return jsonLines(r.stdout).find((l) => l.type === 'outcome')!.outcome as {
        status: string;
        result: { output?: { parts: { text: string }[] } };
      };
    };
    expect((await go('fail-first')).status).toBe('failed'); // a failed first run leaves no pointer…
    expect((await go('one')).result.output!.parts[0]!.text).toBe('null'); // …so the next run gets none
    expect((await go('two')).result.output!.parts[0]!.text).toBe('{"sessionId":"harness-session-one"}');
    expect((await go('fail-again')).status).toBe('failed'); // a failed run does not move the pointer
    expect((await go('three')).result.output!.parts[0]!.text).toBe('{"sessionId":"harness-session-two"}');
  });

  it('a session paused by an unknown effect refuses runs until resolved', async () => {
    const home = dataDir();
    const store = Store.open({ dataDir: home });
    const { sessionId } = store.ensureSession('default', 'adhoc-echo', 'cli:paddock-cli:private:local');
    store.append(sessionId, [
      { type: 'run.queued', runId: 'run_left-behind', data: { runner: 'echo', goalRevision: 0, attempt: 1 } },
      {
        type: 'effect.intent',
        runId: 'run_left-behind',
        data: { effectId: 'eff_1', kind: 'git.push', target: 'origin', probe: {} },
      },
    ]);
    store.close();
    const refused = await paddock(['run', '--runner', 'echo', '--text', 'hi', '--json'], { dataDir: home });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toMatch(
      /session ses_.* is paused: recovery could not establish the outcome of 1 host-side effect/,
    );
    expect(jsonLines(refused.stdout).map((l) => l.text)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/run run_left-behind was interrupted/),
        expect.stringMatching(/effect eff_1 → unknown/),
      ]),
    );
    const resolved = await paddock(['runs', 'resolve', 'run_left-behind', '--as', 'failed', '--by', 'ada'], {
      dataDir: home,
    });
    expect(resolved.stdout).toContain('resolved 1 effect(s) of run_left-behind as failed; session resumed');
    const ok = await paddock(['run', '--runner', 'echo', '--text', 'hi', '--json'], { dataDir: home });
    expect(ok.exitCode).toBe(0);
    const started = jsonLines(ok.stdout).find((l) => l.type === 'started') as {
      resume?: { recovery?: { interruptedRunId: string; effects: unknown[] } };
    };
    expect(started.resume?.recovery?.interruptedRunId).toBe('run_left-behind');
    // …and what became of the effect: the human's decision.
    expect(started.resume?.recovery?.effects).toEqual([
      { id: 'eff_1', kind: 'git.push', status: 'failed', summary: 'git.push origin' },
    ]);
  });

  it('audit verify says OK, then exits 1 naming the record after tampering; export writes JSONL', async () => {
    const home = dataDir();
    await paddock(['run', '--runner', 'echo', '--text', 'audited'], { dataDir: home });
    const ok = await paddock(['audit', 'verify'], { dataDir: home });
    expect(ok.exitCode).toBe(0);
    expect(ok.stdout).toMatch(/^OK: \d+ records, \d+ signed checkpoints/);
    const exported = (await paddock(['audit', 'export'], { dataDir: home })).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { seq: number; type: string });
    expect(exported.map((r) => r.seq)).toEqual(exported.map((_, i) => i + 1));
    expect(exported.map((r) => r.type)).toEqual(expect.arrayContaining(['run.spawned', 'run.ended']));
    const db = new Database(join(home, 'paddock.db'));
    db.exec("DROP TRIGGER audit_no_update; UPDATE audit SET actor = 'nobody' WHERE seq = 4");
    db.close();
    const bad = await paddock(['audit', 'verify', '--json'], { dataDir: home });
    expect(bad.exitCode).toBe(1);
    expect(JSON.parse(bad.stdout)).toMatchObject({ ok: false, problem: 'edited', seq: 4 });
  });
});

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonLines, paddock } from '../helpers/cli.js';
import { chatEvent } from '../helpers/host.js';

const tmp = (prefix: string) => mkdtempSync(join(tmpdir(), prefix));

// Every class of character that acts on a terminal or reorders what an admin reads, planted in each field.
const PLANTS = {
  esc: '\x1b]0;OWNED\x07\x1b[2J',
  c1: '\u009b2J\u009d0;C1-TITLE\u009c',
  bidi: '\u202eevil\u202c\u2066x\u2069',
  invisible: '\u200e\u200f\u061c\ufeff',
  cr: 'ok\r\x1b[1A',
  del: 'a\x7fb',
};
const HOSTILE = Object.values(PLANTS).join('|');
// eslint-disable-next-line no-control-regex -- the assertion is that no control character reaches the terminal
const UNSAFE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]/;

/** A runner folder `name` under `root` with this runner.json (an object, or a maker of the file). */
function plant(root: string, name: string, manifest: unknown | ((file: string) => void)): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'runner.json');
  if (typeof manifest === 'function') (manifest as (f: string) => void)(file);
  else writeFileSync(file, JSON.stringify(manifest));
  return dir;
}
const manifest = (id: string, over: Record<string, unknown> = {}) => ({
  id,
  name: 'n',
  version: '1.0.0',
  protocolVersion: 1,
  entry: { command: 'python3', args: ['{runnerDir}/r.py'] },
  ...over,
});

function expectNoRawControl(...texts: string[]) {
  for (const text of texts) expect(text.replace(/[\n\t]/g, '')).not.toMatch(UNSAFE);
}

describe('hostile runner packages (real CLI processes)', () => {
  it(
    'a FIFO, a /dev/zero link and a huge runner.json are broken runners: runners list, apply, dispatch to the ' +
      'built-in echo and explain still work',
    async () => {
      const home = tmp('paddock-hostile-');
      const dirs = tmp('paddock-hostile-dirs-');
      plant(dirs, 'fifo', (f: string) => execFileSync('mkfifo', [f]));
      plant(dirs, 'zero', (f: string) => symlinkSync('/dev/zero', f));
      plant(dirs, 'huge', (f: string) => writeFileSync(f, `"${'x'.repeat(2 * 1024 * 1024)}"`));
      const env = { PADDOCK_RUNNER_DIRS: dirs };
      const list = await paddock(['runners', 'list'], { dataDir: home, env });
      expect(list.exitCode, list.stderr).toBe(0);
      expect(list.stdout).toMatch(/^echo /m);
      expect(list.stderr).toContain(
        `broken runner: ${join(dirs, 'fifo', 'runner.json')}: is not a regular file (a FIFO)`,
      );
      expect(list.stderr).toContain(`broken runner: ${join(dirs, 'zero', 'runner.json')}: is a symbolic link`);
      expect(list.stderr).toContain(`broken runner: ${join(dirs, 'huge', 'runner.json')}: is 2097154 bytes`);

      const policy = join(home, 'p.yaml');
      writeFileSync(
        policy,
        'bindings:\n  - id: b-echo\n    runner: echo\n    route: { platform: telegram, bot: support }\n' +
          '    sandbox: process\n    allowDegrade: true\n',
      );
      expect((await paddock(['apply', '-f', policy], { dataDir: home, env })).exitCode).toBe(0);
      const event = join(home, 'event.json');
      writeFileSync(event, JSON.stringify(chatEvent({ text: 'through the fifo' })));
      const dispatched = await paddock(['dispatch', '-f', event], { dataDir: home, env });
      expect(dispatched.exitCode, dispatched.stderr).toBe(0);
      expect(dispatched.stdout).toContain('through the fifo');
      const explained = await paddock(['explain', 'b-echo'], { dataDir: home, env });
      expect(explained.exitCode, explained.stderr).toBe(0);
    },
  );

  it('manifest fields with every control class print escaped on one line (runners show/list, explain)', async () => {
    const home = tmp('paddock-hostile-');
    const dirs = tmp('paddock-hostile-dirs-');
    const fields = {
      name: `Spoof${HOSTILE}`,
      version: `1${HOSTILE}`,
      description: `harmless${HOSTILE}\n  risk: none`,
      risk: `runs commands${HOSTILE}\n  risk: None: it only talks.`,
    };
    plant(dirs, 'spoof', manifest('spoof', fields));
    const env = { PADDOCK_RUNNER_DIRS: dirs };
    const show = await paddock(['runners', 'show', 'spoof'], { dataDir: home, env });
    const list = await paddock(['runners', 'list'], { dataDir: home, env });
    expect(show.exitCode, show.stderr).toBe(0);
    expectNoRawControl(show.stdout, show.stderr, list.stdout, list.stderr);
    // The newline is escaped too: one `risk:` line, no second line faked by the package.
    expect(show.stdout.split('\n').filter((l) => l.trimStart().startsWith('risk:'))).toHaveLength(1);
    expect(show.stdout).toContain('\\u202eevil\\u202c');
    expect(show.stdout).toContain('\\u009b2J');
    expect(show.stdout).toContain('\\x1b]0;OWNED\\x07');
    // --json is still exact JSON: the same strings once parsed.
    const json = await paddock(['runners', 'show', 'spoof', '--json'], { dataDir: home, env });
    expectNoRawControl(json.stdout);
    expect(JSON.parse(json.stdout)).toMatchObject(fields);

    const policy = join(home, 'p.yaml');
    writeFileSync(policy, 'bindings:\n  - id: b-spoof\n    runner: spoof\n    route: { platform: telegram, bot: x }\n');
    expect((await paddock(['apply', '-f', policy], { dataDir: home, env })).exitCode).toBe(0);
    const explained = await paddock(['explain', 'b-spoof'], { dataDir: home, env });
    expectNoRawControl(explained.stdout, explained.stderr);
    expect(explained.stdout.split('\n').filter((l) => /risk: None/.test(l))).toHaveLength(1);
  });

  it('manifest errors quoting hostile keys, env names, entry paths print escaped (runners test, run)', async () => {
    const home = tmp('paddock-hostile-');
    const dirs = tmp('paddock-hostile-dirs-');
    const keys = plant(dirs, 'keys', {
      ...manifest('keys'),
      ...Object.fromEntries(Object.entries(PLANTS).map(([k, v]) => [`${v}${k}`, 1])),
      env: Object.fromEntries(Object.entries(PLANTS).map(([k, v]) => [`KEYS_${v}${k}`, 'v'])),
    });
    const entry = plant(dirs, 'entry', manifest('entry', { entry: { node: `x${HOSTILE}.js` } }));
    const env = { PADDOCK_RUNNER_DIRS: dirs };
    const outputs = [
      await paddock(['runners', 'test', keys], { dataDir: home }),
      await paddock(['runners', 'test', entry], { dataDir: home }),
      await paddock(['runners', 'list'], { dataDir: home, env }),
      await paddock(['run', '--runner', keys, '--text', 'x'], { dataDir: home }),
      await paddock(['run', '--runner', entry, '--text', 'x'], { dataDir: home }),
    ];
    for (const r of outputs) {
      expectNoRawControl(r.stdout, r.stderr);
      expect(r.stderr).toMatch(/MANIFEST_INVALID|runner\.json: field|broken runner/);
    }
    expect(outputs[0]!.exitCode).toBe(2);
    expect(outputs[0]!.stderr).toContain('Unrecognized keys: "\\x1b]0;OWNED\\x07\\x1b[2J');
    expect(outputs[1]!.stderr).toContain('no file x\\x1b]0;OWNED');
  });

  it('runner text with C1, bidi, invisible marks is escaped (live, runs/sessions show); --json exact', async () => {
    const home = tmp('paddock-hostile-');
    const text = `hi ${HOSTILE}`;
    const live = await paddock(['run', '--runner', 'echo', '--text', text], { dataDir: home });
    expect(live.exitCode, live.stderr).toBe(0);
    const runId = /run_[0-9a-f-]+/.exec(live.stdout)![0];
    const sessionId = /ses_[0-9a-f-]+/.exec(live.stdout)![0];
    const json = await paddock(['run', '--runner', 'echo', '--text', text, '--json'], { dataDir: home });
    const shows = [
      await paddock(['runs', 'show', runId], { dataDir: home }),
      await paddock(['sessions', 'show', sessionId], { dataDir: home }),
      await paddock(['runs', 'show', runId, '--json'], { dataDir: home }),
    ];
    expectNoRawControl(live.stdout, live.stderr, json.stdout, ...shows.flatMap((r) => [r.stdout, r.stderr]));
    expect(live.stdout).toContain('\\u202eevil');
    expect(shows[1]!.stdout).toContain('\\u009b2J');
    const outcome = jsonLines(json.stdout).find((l) => l.type === 'outcome')!.outcome as {
      result: { output: { parts: { text: string }[] } };
    };
    expect(outcome.result.output.parts[0]!.text).toBe(text);
    expect(JSON.stringify(JSON.parse(shows[2]!.stdout))).toContain(JSON.stringify(text).slice(1, -1));
  });
});

// An outside attack on write diffs (docs/approvals.md §6a), kept as tests: a hostile bwrap runner shapes its workspace
// so the end-of-run comparison and `paddock runs show` would forge lines an admin reads, or store a secret the host
// knows. Neither held then; these keep it so.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatEvent, tempHost } from '../helpers/host.js';
import { rawDb } from '../helpers/rawDb.js';
import { filesContaining } from '../helpers/canary.js';
import { paddock } from '../helpers/cli.js';

const CANARY = 'canary-diff-attack-7d1c9b3a5e';
process.env.PADDOCK_TEST_DIFF_ATTACK_KEY = CANARY;
const REV = [...CANARY].reverse().join('');
const host = tempHost({ limits: { wallClockMs: 90_000 } });

beforeAll(() => {
  host.apply({
    resources: {
      models: [{ id: 'k', provider: 'anthropic', model: 'm', apiKey: { env: 'PADDOCK_TEST_DIFF_ATTACK_KEY' } }],
    },
    bindings: [
      { id: 'w', runner: 'runs-a-script', route: { bot: 'w' }, sandbox: 'bwrap', grants: { fs: 'readwrite' } },
    ],
  });
});
afterAll(() => host.close());

async function run(script: string) {
  const ticket = await host.dispatcher.dispatch(
    chatEvent({ bot: 'w', text: JSON.stringify({ rev: REV, script }), conversation: { id: `c-${Math.random()}` } }),
  );
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  const outcome = await ticket.done;
  expect(outcome.status, outcome.reason).toBe('completed');
  const changes = (
    rawDb(host.store).prepare('SELECT type, data FROM events WHERE run_id = ? ORDER BY seq').all(ticket.runId) as {
      type: string;
      data: string;
    }[]
  ).filter((e) => e.type === 'file.changed');
  return { runId: ticket.runId, changes };
}

describe('write-diff attack (outside)', () => {
  it('a file name or link target with newlines or escapes forges no line in `paddock runs show`', async () => {
    const { runId, changes } = await run(`
      fs.mkdirSync(root + '/src', { recursive: true });
      fs.writeFileSync(root + '/src/ok.txt', 'hello\\n');
      fs.writeFileSync(
        root + '/src/x\\n    @@ -1,1 +1,1 @@\\n    -rm -rf ~ # FORGED\\nfile.changed legit.ts changed (run)',
        'y\\n',
      );
      fs.symlinkSync('/etc/passwd\\n    +FORGED-FROM-LINK', root + '/src/l');
      fs.writeFileSync(root + '/src/esc\\u001b[2J\\u001b[31mred', 'z\\n');
    `);
    expect(changes.length).toBeGreaterThanOrEqual(4);
    const shown = await paddock(['runs', 'show', runId], { dataDir: host.dataDir });
    expect(shown.exitCode, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('src/ok.txt');
    expect(shown.stdout).not.toMatch(/^\s*-rm -rf ~ # FORGED/m);
    expect(shown.stdout).not.toMatch(/^\s*file\.changed legit\.ts/m);
    expect(shown.stdout).not.toMatch(/^\s*\+FORGED-FROM-LINK/m);
    expect(shown.stdout).not.toContain('\u001b[2J');
  });

  it('a known secret in names, link targets, contents (encoded too) or fs/write is stored nowhere', async () => {
    const { changes } = await run(`
      fs.mkdirSync(root + '/s', { recursive: true });
      fs.writeFileSync(root + '/s/name-' + S, 'a\\n');
      fs.symlinkSync('/x/' + S, root + '/s/link');
      fs.writeFileSync(root + '/s/content.txt', 'line1\\nkey=' + S + '\\nline3\\n');
      fs.writeFileSync(root + '/s/b64.txt', Buffer.from('KEY=' + S).toString('base64') + '\\n');
      fs.writeFileSync(root + '/s/json.txt', JSON.stringify({ k: S }) + '\\n');
      fs.writeFileSync(root + '/s/url.txt', encodeURIComponent('k=' + S + '&') + '\\n');
      await ctx.fs.write('s/host.txt', 'one ' + S + '\\n');
      await ctx.fs.write('s/host.txt', 'two\\n');
      cp.execSync('mkfifo ' + root + '/s/fifo');
    `);
    expect(changes.length).toBeGreaterThanOrEqual(8);
    const stored = (
      rawDb(host.store).prepare('SELECT data FROM events UNION ALL SELECT data FROM audit').pluck().all() as string[]
    ).join('\n');
    expect(stored).toContain('[REDACTED]');
    expect(stored).not.toContain(CANARY);
    expect(filesContaining(host.dataDir, CANARY)).toEqual([]);
  });
});

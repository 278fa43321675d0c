// Steering `append` between host processes of one SQLite data folder (docs/approvals.md §7): `paddock dispatch` run
// while `paddock serve` runs the conversation's run asks serve's run through the store (`run_messages`); serve's
// runner takes the message and the command says "appended". The same code as across hosts on PostgreSQL
// (postgres/serveAppend.test.ts), on the other store.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyWithPlatformToken, paddock } from '../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS } from '../helpers/host.js';
import { rendezvous } from '../helpers/rendezvous.js';
import { startServe, type ServeChild } from '../helpers/serve.js';
import { dispatchTo, runFrom } from '../helpers/serveApi.js';

const home = mkdtempSync(join(tmpdir(), 'paddock-append-processes-'));
const rv = rendezvous(home);
const env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS };
let serve: ServeChild | undefined;
let token = '';

beforeAll(async () => {
  token = await applyWithPlatformToken(
    home,
    'bindings:\n  - { id: takes, runner: takes-appended-messages, sandbox: process, steering: append, ' +
      `route: { bot: takes }, config: { socket: ${JSON.stringify(rv.path)}, mode: take } }\n`,
    env,
  );
  serve = await startServe(home, [], env);
}, 60_000);

afterAll(async () => {
  if (serve) expect(await serve.stop()).toBe(0);
  rv.close();
});

describe('steering append between host processes (SQLite)', () => {
  it("a message dispatched by the CLI reaches serve's running run: appended, one run", async () => {
    const first = await dispatchTo(
      serve!,
      token,
      chatEvent({ bot: 'takes', text: 'write it', conversation: { id: 'p1' } }),
    );
    await rv.arrived(first.runId);
    const event = chatEvent({ bot: 'takes', text: 'then test it', conversation: { id: 'p1' } });
    const cli = await paddock(['dispatch', '-f', '-'], { dataDir: home, env, input: JSON.stringify(event) });
    expect(cli.exitCode, cli.stderr).toBe(0);
    expect(cli.stdout).toContain(`appended to the running run ${first.runId}`);
    rv.go(first.runId);
    await expect
      .poll(async () => (await runFrom(serve!, token, first.runId)).status, { timeout: 20_000 })
      .toBe('completed');
    const runs = await paddock(['runs', 'list', '--json'], { dataDir: home, env });
    expect(runs.stdout.match(/run_[0-9a-f-]{36}/g)?.filter((id, i, all) => all.indexOf(id) === i)).toEqual([
      first.runId,
    ]);
  });
});

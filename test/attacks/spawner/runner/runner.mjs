// Adversarial protocol-v1 runner (plain JS, no SDK) for the runner-spawner attack.
// The event text is a list of words `mode[:arg]`, run in order, e.g. `info daemons hold:30`.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import readline from 'node:readline';

const send = (m) => fs.writeSync(1, JSON.stringify(m) + '\n');
let seq = 0;
let runId = null;
let runReqId = null;
let nextId = 1000;
const pending = new Map();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** Wait until `done()` holds (checked every 20 ms), or fail the run after 5 s naming `what`: never a fixed guess. */
async function until(done, what) {
  const giveUpAt = Date.now() + 5_000;
  while (!done()) {
    if (Date.now() > giveUpAt) throw new Error(`gave up waiting for ${what}`);
    await sleep(20);
  }
}
/** Whether a live process's command line holds `marker` (the attack's sleepers carry unique numbers). */
const running = (marker) =>
  fs.readdirSync('/proc').some((d) => /^\d+$/.test(d) && read(`/proc/${d}/cmdline`).split('\0').includes(marker));
const say = (text) =>
  send({
    jsonrpc: '2.0',
    method: 'run/update',
    params: { runId, seq: ++seq, update: { kind: 'message', parts: [{ type: 'text', text }] } }, // whole: not held back
  });
const hostCall = (method, params) =>
  new Promise((resolve) => {
    const id = nextId++;
    pending.set(id, resolve);
    send({ jsonrpc: '2.0', id, method, params: { runId, ...params } });
  });
const sh = (script, opts = {}) =>
  spawn('/bin/sh', ['-c', script], { stdio: 'ignore', detached: !!opts.detached, env: opts.env ?? process.env });
const read = (p) => {
  try {
    return fs.readFileSync(p, 'utf8');
  } catch (e) {
    return `(${e.code})`;
  }
};

function chain() {
  const out = [];
  let pid = process.pid;
  for (let i = 0; i < 8 && pid > 1; i++) {
    const stat = read(`/proc/${pid}/stat`);
    const m = /^\d+ \((.*)\) (\S) (\d+) (\d+) (\d+)/.exec(stat);
    if (!m) break;
    const cmd = read(`/proc/${pid}/cmdline`).replace(/\0/g, ' ').slice(0, 80);
    out.push(`${pid} ${m[1]} state=${m[2]} pgid=${m[4]} sid=${m[5]} cmd=${cmd}`);
    pid = Number(m[3]);
  }
  return out.join('\n');
}
function fds() {
  return fs
    .readdirSync('/proc/self/fd')
    .map((fd) => {
      try {
        return `${fd}->${fs.readlinkSync(`/proc/self/fd/${fd}`)}`;
      } catch {
        return fd;
      }
    })
    .join(' ');
}
// The spawner: the nearest ancestor that is `node -e` (docs/runner-spawner.md).
function spawnerPid() {
  let pid = process.pid;
  for (let i = 0; i < 10 && pid > 1; i++) {
    const stat = read(`/proc/${pid}/stat`);
    const m = /^\d+ \((.*)\) (\S) (\d+)/.exec(stat);
    if (!m) return null;
    const cmd = read(`/proc/${pid}/cmdline`).split('\0');
    if (pid !== process.pid && /node$/.test(cmd[0]) && cmd[1] === '-e') return pid;
    pid = Number(m[3]);
  }
  return null;
}
function unifiedCgroup() {
  const line = read('/proc/self/cgroup')
    .split('\n')
    .find((l) => l.startsWith('0::'));
  return line ? '/sys/fs/cgroup/unified' + line.slice(3) : null;
}

const modes = {
  info: async () => {
    say(`pid=${process.pid} uid=${process.getuid()} PADDOCK_RUN_ID=${process.env.PADDOCK_RUN_ID}`);
    say(`cgroup:\n${read('/proc/self/cgroup')}`);
    say(`chain:\n${chain()}`);
    say(`fds: ${fds()}`);
    say(`env keys: ${Object.keys(process.env).join(',')}`);
  },
  // Wait s seconds, with a progress update every 10 s so that the idle limit does not end the run.
  hold: async (s) => {
    const end = Date.now() + Number(s ?? 30) * 1000;
    while (Date.now() < end) {
      await sleep(Math.min(10_000, end - Date.now()));
      send({
        jsonrpc: '2.0',
        method: 'run/update',
        params: { runId, seq: ++seq, update: { kind: 'progress', message: 'holding' } },
      });
    }
  },
  // Processes that try to outlive the run: setsid, double fork, env -i, all with unique markers.
  daemons: async () => {
    sh('exec setsid -f sleep 99911');
    sh('( sleep 99912 & ) ; true');
    sh('exec setsid -f env -i /bin/sleep 99913');
    sh('exec setsid -f sh -c "trap \\"\\" TERM HUP INT; while :; do sleep 99914; done"');
    for (const marker of ['99911', '99912', '99913', '99914']) await until(() => running(marker), `sleep ${marker}`);
    say('daemons started');
  },
  // Continuous forking: new setsid sleepers and fork/exit churn, so that a kill meets a fork in flight.
  forkstorm: async (n) => {
    for (let i = 0; i < Number(n ?? 2); i++) {
      sh('while :; do setsid -f sleep 99921 2>/dev/null; ( sleep 99922 & ) ; /bin/true; done');
    }
    say('forkstorm started');
  },
  spin: async (n) => {
    for (let i = 0; i < Number(n ?? 8); i++) sh('while :; do :; done');
    say(`spinning ${n}`);
  },
  // Sleepers with a large environment: every /proc scan of environ reads them.
  bigenv: async (arg) => {
    const [n, kb] = (arg ?? '100,1000').split(',').map(Number);
    const env = { PADDOCK_RUN_ID: process.env.PADDOCK_RUN_ID };
    for (let i = 0; i < kb; i++) env[`PAD${i}`] = 'x'.repeat(1000);
    env.PADDOCK_RUN_ID_LAST = process.env.PADDOCK_RUN_ID;
    const started = [];
    for (let i = 0; i < n; i++) {
      const child = spawn('/bin/sleep', ['99941'], { stdio: 'ignore', env });
      started.push(new Promise((resolve, reject) => child.once('spawn', resolve).once('error', reject)));
    }
    await Promise.all(started);
    say(`bigenv ${n} x ${kb} KB`);
  },
  // Process backend (root): a daemon in a child cgroup of the run's own unified cgroup, fresh env, setsid.
  nestcg: async () => {
    const cg = unifiedCgroup();
    const sub = `${cg}/keep`;
    fs.mkdirSync(sub, { recursive: true });
    spawn('/usr/bin/setsid', ['-f', '/bin/sh', '-c', `echo $$ > ${sub}/cgroup.procs; exec env -i /bin/sleep 99951`], {
      stdio: 'ignore',
      env: {},
    });
    await until(() => /\d/.test(read(`${sub}/cgroup.procs`)), `a member of ${sub}`);
    say(`nestcg: made ${sub}, procs=${read(`${sub}/cgroup.procs`).trim()}`);
  },
  // Process backend: same, but a child cgroup in every v1 hierarchy the run has (pids, memory...).
  nestv1: async () => {
    const dirs = read('/proc/self/cgroup')
      .split('\n')
      .filter((l) => /paddock/.test(l) && !l.startsWith('0::'));
    for (const l of dirs) {
      const [, ctrl, path] = l.split(':');
      const dir = `/sys/fs/cgroup/${ctrl.replace(/^name=/, '')}${path}/keep`;
      try {
        fs.mkdirSync(dir, { recursive: true });
        say(`made ${dir}`);
      } catch (e) {
        say(`${dir}: ${e.code}`);
      }
    }
  },
  // Process backend: leave only the unified (kill) cgroup, stay in the v1 limit cgroups; fresh env.
  leavekill: async () => {
    spawn(
      '/usr/bin/setsid',
      ['-f', '/bin/sh', '-c', 'echo $$ > /sys/fs/cgroup/unified/cgroup.procs; exec env -i /bin/sleep 99961'],
      { stdio: 'ignore', env: {} },
    );
    await until(() => running('99961'), 'sleep 99961');
    say('leavekill started');
  },
  // Process backend: put the runner spawner into a frozen v1 freezer cgroup (not SIGSTOP: /proc state is not T).
  freezespawner: async () => {
    const sp = spawnerPid();
    const dir = `/sys/fs/cgroup/freezer/attack-freeze-${process.pid}`;
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(`${dir}/cgroup.procs`, String(sp));
    fs.writeFileSync(`${dir}/freezer.state`, 'FROZEN');
    // The state reads FREEZING until every member is frozen.
    await until(() => read(`${dir}/freezer.state`).trim() === 'FROZEN', 'the freezer to reach FROZEN');
    const state = read(`/proc/${sp}/stat`).split(' ')[2];
    say(`froze spawner ${sp}: ${read(`${dir}/freezer.state`).trim()}, /proc state ${state}`);
  },
  stopspawner: async () => {
    const sp = spawnerPid();
    process.kill(sp, 'SIGSTOP');
    say(`stopped spawner ${sp}`);
  },
  killspawner: async () => {
    const sp = spawnerPid();
    process.kill(sp, 'SIGKILL');
    say(`killed spawner ${sp}`);
  },
  mcp: async (tool) => {
    const r = await hostCall('tool/call', { server: 'sleeper', tool: tool ?? 'nap', arguments: {} });
    say(`mcp: ${JSON.stringify(r).slice(0, 3000)}`);
  },
  // Ask for a tool call and do not wait for it: the run's result follows at once (an MCP server start racing the end).
  mcpfire: async (delayMs) => {
    void hostCall('tool/call', { server: 'sleeper', tool: 'nap', arguments: {} });
    await sleep(Number(delayMs ?? 0));
  },
  fail: async () => {
    throw new Error('asked to fail');
  },
};

async function doRun(id, params) {
  runId = params.run.runId;
  runReqId = id;
  const text = (params.event?.message?.parts ?? [])
    .filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join(' ');
  try {
    for (const word of text.split(/\s+/).filter(Boolean)) {
      const [mode, arg] = word.split(':');
      if (!modes[mode]) {
        say(`unknown mode ${mode}`);
        continue;
      }
      await modes[mode](arg);
    }
    send({
      jsonrpc: '2.0',
      id,
      result: { status: 'completed', output: { parts: [{ type: 'text', text: `done: ${text}` }] } },
    });
  } catch (e) {
    send({ jsonrpc: '2.0', id, result: { status: 'failed', error: { message: String(e?.stack ?? e) } } });
  }
}

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  if (!line.trim()) return;
  let m;
  try {
    m = JSON.parse(line);
  } catch {
    return;
  }
  if (m.method === 'initialize')
    send({
      jsonrpc: '2.0',
      id: m.id,
      result: {
        protocolVersion: 1,
        runner: { name: 'spawner-attack', version: '0.0.1' },
        capabilities: { cancel: true },
      },
    });
  else if (m.method === 'run') void doRun(m.id, m.params);
  else if (m.method === 'run/cancel') {
    if (runReqId !== null) send({ jsonrpc: '2.0', id: runReqId, result: { status: 'cancelled' } });
  } else if (m.method === 'shutdown') {
    send({ jsonrpc: '2.0', id: m.id, result: {} });
    process.exit(0);
  } else if (m.id !== undefined && m.method === undefined) {
    const r = pending.get(m.id);
    pending.delete(m.id);
    r?.(m.result ?? m.error);
  } else if (m.id !== undefined) send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no such method' } });
});
rl.on('close', () => process.exit(0));

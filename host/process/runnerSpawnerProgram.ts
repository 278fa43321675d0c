/**
 * The runner spawner's program (CommonJS, for `node -e`; runnerSpawner.ts is the host's side; docs/runner-spawner.md):
 * one IPC message per runner to start; it answers with the runner's stdio sockets (handles), then its pid and start
 * time or the error, and later its exit. When the channel closes (the host went, however it went) it kills every run
 * it started that may still be alive — `cgroup.kill` of the run's cgroups, SIGKILL of the runner's process group
 * while the runner is its unreaped child — and leaves. It kills them likewise when the host's lease passes unrenewed.
 */
export const RUNNER_SPAWNER_PROGRAM = `
const { spawn } = require('node:child_process');
const { closeSync, existsSync, readdirSync, readFileSync, writeFileSync } = require('node:fs');
// A descriptor the host was started with (a supervisor's pipe, a socket) is inherited by this process, and from it by
// every runner, into its sandbox: close each one that is not close-on-exec before the first spawn. What node and
// libuv open (the IPC channel included) is close-on-exec; node marks only fds 0-15 (and up to the first gap) so.
for (const name of readdirSync('/proc/self/fd')) {
  const fd = Number(name);
  try {
    const flags = /^flags:\\s*([0-7]+)/m.exec(readFileSync('/proc/self/fdinfo/' + fd, 'utf8'));
    if (fd > 2 && flags && (parseInt(flags[1], 8) & 0o2000000) === 0) closeSync(fd);
  } catch {
    // Gone meanwhile (the listing's own descriptor).
  }
}
// The runs started here that may still hold a process, by request id: the runner and the run's cgroup directories.
// A run stays until its runner was reaped and its cgroups are gone (the host removes them at the run's end).
const runs = new Map();
const unreaped = (child) => child.exitCode === null && child.signalCode === null;
const prune = () => {
  for (const [id, run] of runs) if (!unreaped(run.child) && !run.cgroups.some((d) => existsSync(d))) runs.delete(id);
};
const members = (dirs) => {
  const pids = new Set();
  for (const d of dirs) {
    try {
      // A member outside this pid namespace reads as 0, and kill(0) is this process's own group: never signalled.
      for (const p of readFileSync(d + '/cgroup.procs', 'utf8').split('\\n')) {
        if (Number(p) > 1 && Number(p) !== process.pid) pids.add(Number(p));
      }
    } catch {}
  }
  return pids;
};
// Every process of one run: cgroup.kill (v2: the kernel kills the whole cgroup, forks included); else, v1, each
// member with the freezer (if any) frozen meanwhile; and the runner's group, only while the runner is this process's
// unreaped child: its pid, and so its group id, cannot have been reused by a process this spawner did not start.
const killRun = ({ child, cgroups }) => {
  let killed = false;
  for (const d of cgroups) {
    try {
      writeFileSync(d + '/cgroup.kill', '1');
      killed = true;
    } catch {}
  }
  if (!killed && cgroups.length > 0) {
    const freezers = cgroups.filter((d) => existsSync(d + '/freezer.state'));
    for (const d of freezers) try { writeFileSync(d + '/freezer.state', 'FROZEN'); } catch {}
    for (const pid of members(cgroups)) try { process.kill(pid, 'SIGKILL'); } catch {}
    for (const d of freezers) try { writeFileSync(d + '/freezer.state', 'THAWED'); } catch {}
  }
  if (unreaped(child)) try { process.kill(-child.pid, 'SIGKILL'); } catch {}
};
// The start time (clock ticks after boot) of an unreaped child: the host kills a pid it no longer waits for only
// when this still matches (never a reused pid).
const startOf = (pid) => {
  try {
    const stat = readFileSync('/proc/' + pid + '/stat', 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  } catch {
    return null;
  }
};
const failed = (id, e) => process.send({ id, error: { code: e.code, message: e.message } });
// The host's lease (several hosts on PostgreSQL; docs/runner-spawner.md, "The host pauses past its lease"): after each
// renewal the host sends how long its lease surely lasts ({ lease: ms }; null: it holds none). A host paused past that
// (SIGSTOP, a frozen VM) may be taken over by now, and another host may run the conversation's next run: when the time
// passes with no renewal, every run started here is killed, and no runner starts until a renewal comes.
let leaseEnd = null;
let leaseKilled = false;
const leaseRanOut = () => leaseEnd !== null && performance.now() >= leaseEnd;
process.on('message', (r) => {
  if ('lease' in r) {
    leaseEnd = r.lease === null ? null : performance.now() + r.lease;
    leaseKilled = false;
    return;
  }
  prune();
  if (leaseRanOut())
    return failed(r.id, { code: 'LEASE_RAN_OUT', message: "the host's lease ran out unrenewed: no runner starts" });
  let child;
  try {
    child = spawn(r.command, r.args, { cwd: r.cwd, env: r.env, detached: true, stdio: ['pipe', r.stdout, 'pipe'] });
  } catch (e) {
    return failed(r.id, e);
  }
  if (child.pid !== undefined) runs.set(r.id, { child, cgroups: r.cgroups || [] });
  // Not one byte of the runner's output may be read here (a handle being sent discards what it reads): stop
  // reading before this process's event loop runs; the host reads from its own copy of each socket.
  for (const s of [child.stdout, child.stderr]) {
    if (s && s._handle && s._handle.reading) {
      s._handle.reading = false;
      s._handle.readStop();
    }
  }
  child.once('error', (e) => { if (child.pid === undefined) failed(r.id, e); });
  child.once('spawn', () => {
    for (const stream of ['stdin', 'stdout', 'stderr'])
      if (child[stream]) process.send({ id: r.id, stream }, child[stream]);
    process.send({ id: r.id, pid: child.pid, start: startOf(child.pid) });
  });
  child.once('exit', (code, signal) => process.send({ id: r.id, exit: { code, signal } }));
});
// A stop signal sent to the host's whole process group (a service manager's stop, Ctrl-C in a terminal) is the
// host's to handle: it drains or cancels its runs, then exits, and this process leaves with it (below). Dying of the
// signal here would end every run the host was draining as crashed (the outside attack's A10).
// Ctrl-Z in a terminal (SIGTSTP to the group) stops the host only: this process keeps watching its lease (below).
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGTSTP']) process.on(signal, () => {});
// The host went (killed, crashed, or exited): no run it started may go on unsupervised (decisions SP3). A host that
// exits on its own has killed its runs already (its exit hook); this is what a SIGKILLed host cannot do.
const hostGone = () => {
  prune();
  for (const run of runs.values()) killRun(run);
  process.exit(0);
};
process.on('disconnect', hostGone);
// Node emits no 'disconnect' when the channel ends while a handle sent here waits for the host's acknowledgement (a
// host killed between a runner's spawn and taking its stdio): the channel is closed and process.connected false,
// but the event waits for an acknowledgement that never comes. So the channel's state is also looked at.
setInterval(() => {
  if (!process.connected) return hostGone();
  if (leaseRanOut() && !leaseKilled) {
    leaseKilled = true;
    prune();
    for (const run of runs.values()) killRun(run);
  }
}, 100);
`;

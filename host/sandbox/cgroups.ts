import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, watch, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { signalEach, waitUntilGone } from '../../sdk/process/procTable.js';

/** Where this machine's cgroup hierarchies are, as this process sees them. */
export interface CgroupLayout {
  /** v1 controller → the directory of this process's own cgroup in that hierarchy. */
  v1: Map<string, string>;
  /** The cgroup v2 directory of this process (unified or pure v2), if mounted. */
  v2?: string;
  /** Controllers enabled for children in the v2 hierarchy. */
  v2Controllers: string[];
}

/** Read `/proc/self/mountinfo` and `/proc/self/cgroup` into a layout (no writes). */
export function readCgroupLayout(): CgroupLayout {
  const layout: CgroupLayout = { v1: new Map(), v2Controllers: [] };
  let mounts: string[];
  let own: string[];
  try {
    mounts = readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
    own = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
  } catch {
    return layout;
  }
  const ownPath = new Map<string, string>();
  for (const line of own) {
    const [, controllers, path] = line.split(':');
    if (controllers === undefined || path === undefined) continue;
    for (const c of controllers === '' ? ['<v2>'] : controllers.split(',')) ownPath.set(c, path);
  }
  for (const line of mounts) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const mountPoint = left.split(' ')[4]!;
    const [fstype, , superOptions = ''] = right.split(' ');
    if (fstype === 'cgroup') {
      for (const option of superOptions.split(',')) {
        const path = ownPath.get(option);
        if (path !== undefined && ['memory', 'pids', 'cpu', 'cpuacct', 'freezer'].includes(option))
          layout.v1.set(option, join(mountPoint, path));
      }
    } else if (fstype === 'cgroup2') {
      layout.v2 = join(mountPoint, ownPath.get('<v2>') ?? '/');
    }
  }
  if (layout.v2) {
    try {
      layout.v2Controllers = readFileSync(join(layout.v2, 'cgroup.controllers'), 'utf8')
        .trim()
        .split(/\s+/)
        .filter(Boolean);
    } catch {
      layout.v2Controllers = [];
    }
  }
  return layout;
}

/**
 * The members a `cgroup.procs` text lists: the pids this process can see, and how many it cannot — a process outside
 * this process's pid namespace reads as `0` (never a pid to signal: kill(0) is the caller's own process group).
 */
export function parseCgroupProcs(text: string): { pids: number[]; hidden: number } {
  const pids: number[] = [];
  let hidden = 0;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const pid = Number(line);
    if (pid === 0) hidden += 1;
    else if (Number.isSafeInteger(pid) && pid > 0) pids.push(pid);
  }
  return { pids, hidden };
}

/** Limits a run's cgroup can hold. */
export interface CgroupLimits {
  memoryBytes?: number;
  pids?: number;
}

/** Which mechanism enforced each limit, for the run's isolation report. */
export type CgroupApplied = Partial<Record<'memory' | 'pids' | 'killAll', string>>;

const write = (file: string, value: string) => writeFileSync(file, value);

/**
 * One run's cgroups: a directory per usable hierarchy, limits written before the runner joins,
 * a race-free join (the launch wrapper writes its own pid, then execs), and a kill of every
 * member at the end — setsid escapees included, which a process-group kill misses.
 */
export class RunCgroup {
  private constructor(
    private readonly dirs: Map<string, string>,
    readonly applied: CgroupApplied,
    private readonly killFile: string | undefined,
    private readonly freezer: string | undefined,
  ) {}

  /** Create the run's cgroups under this process's own ones; returns undefined if none is writable. */
  static create(name: string, limits: CgroupLimits, layout = readCgroupLayout()): RunCgroup | undefined {
    const dirs = new Map<string, string>();
    const applied: CgroupApplied = {};
    const make = (key: string, parent: string) => {
      const dir = join(parent, 'paddock', name);
      try {
        mkdirSync(dir, { recursive: true });
        dirs.set(key, dir);
        return dir;
      } catch {
        return undefined;
      }
    };
    let killFile: string | undefined;
    if (layout.v2) {
      const dir = make('v2', layout.v2);
      if (dir && existsSync(join(dir, 'cgroup.kill'))) {
        killFile = join(dir, 'cgroup.kill');
        applied.killAll = 'cgroup v2 cgroup.kill';
        try {
          if (limits.memoryBytes && existsSync(join(dir, 'memory.max'))) {
            write(join(dir, 'memory.max'), String(limits.memoryBytes));
            applied.memory = 'cgroup v2 memory.max';
          }
          if (limits.pids && existsSync(join(dir, 'pids.max'))) {
            write(join(dir, 'pids.max'), String(limits.pids));
            applied.pids = 'cgroup v2 pids.max';
          }
        } catch {
          // Not delegated: the v1 hierarchies below may still do it.
        }
      }
    }
    const memory = layout.v1.get('memory');
    if (limits.memoryBytes && !applied.memory && memory) {
      const dir = make('memory', memory);
      if (dir) {
        try {
          write(join(dir, 'memory.limit_in_bytes'), String(limits.memoryBytes));
          // Without swap accounting a process could page out past the limit.
          if (existsSync(join(dir, 'memory.memsw.limit_in_bytes')))
            write(join(dir, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
          applied.memory = 'cgroup v1 memory.limit_in_bytes';
        } catch {
          // Left unapplied; the report says so.
        }
      }
    }
    const pids = layout.v1.get('pids');
    if (limits.pids && !applied.pids && pids) {
      const dir = make('pids', pids);
      if (dir) {
        try {
          write(join(dir, 'pids.max'), String(limits.pids));
          applied.pids = 'cgroup v1 pids.max';
        } catch {
          // Left unapplied; the report says so.
        }
      }
    }
    const freezerRoot = layout.v1.get('freezer');
    const freezer = !killFile && freezerRoot ? make('freezer', freezerRoot) : undefined;
    if (!killFile && freezer) applied.killAll = 'cgroup v1 freezer + SIGKILL of every member';
    if (dirs.size === 0) return undefined;
    return new RunCgroup(dirs, applied, killFile, freezer);
  }

  /**
   * The cgroups a run had, from their recorded directories (e.g. after a host crash, for
   * recovery). Only `<…>/paddock/<runId>` directories under /sys/fs/cgroup that exist are taken:
   * the paths come from the state database, and nothing else may be written to.
   */
  static attach(runId: string, recorded: readonly string[], layout = readCgroupLayout()): RunCgroup | undefined {
    const derived = [...(layout.v2 ? [layout.v2] : []), ...layout.v1.values()].map((d) => join(d, 'paddock', runId));
    const dirs = new Map<string, string>();
    for (const dir of new Set([...recorded, ...derived])) {
      if (
        !dir.startsWith('/sys/fs/cgroup/') ||
        basename(dir) !== runId ||
        basename(dirname(dir)) !== 'paddock' ||
        dir.includes('/../') ||
        !existsSync(join(dir, 'cgroup.procs'))
      )
        continue;
      dirs.set(dir, dir);
    }
    if (dirs.size === 0) return undefined;
    const killFile = [...dirs.values()].map((d) => join(d, 'cgroup.kill')).find((f) => existsSync(f));
    const freezer = killFile ? undefined : [...dirs.values()].find((d) => existsSync(join(d, 'freezer.state')));
    return new RunCgroup(dirs, {}, killFile, freezer);
  }

  /** The run's cgroup directories (recorded with `run.started`, so recovery finds them after a crash). */
  get paths(): string[] {
    return [...this.dirs.values()];
  }

  /** The `cgroup.procs` files the launch wrapper must write its pid into before it execs. */
  get procsFiles(): string[] {
    return [...this.dirs.values()].map((d) => join(d, 'cgroup.procs'));
  }

  /** Live member pids this process can see (from any of the run's hierarchies: every member is in all of them). */
  members(): number[] {
    return this.membership().pids;
  }

  /**
   * How many members this process cannot see (`0` in `cgroup.procs`: outside its pid namespace, e.g. a host started in
   * one recovering a run of a host outside it). They are never signalled, nor killed with the cgroup: whose they are
   * cannot be told from here. The most of any one hierarchy (every member is in all of them).
   */
  hiddenMembers(): number {
    return this.membership().hidden;
  }

  /** The one read of the run's `cgroup.procs` files. */
  private membership(): { pids: number[]; hidden: number } {
    const seen = new Set<number>();
    let hidden = 0;
    for (const dir of this.dirs.values()) {
      try {
        const listed = parseCgroupProcs(readFileSync(join(dir, 'cgroup.procs'), 'utf8'));
        for (const pid of listed.pids) seen.add(pid);
        hidden = Math.max(hidden, listed.hidden);
      } catch {
        // Removed already.
      }
    }
    return { pids: [...seen], hidden };
  }

  /**
   * Kill every member this process can see and wait until none is left (or `timeoutMs`); returns the survivors. With
   * members it cannot see ({@link hiddenMembers}), the visible ones are signalled one by one, not the whole cgroup.
   */
  async killAll(timeoutMs: number): Promise<number[]> {
    // cgroup.kill would kill the hidden members too: processes another pid namespace's host may still be running.
    if (this.killFile && this.hiddenMembers() === 0) {
      try {
        write(this.killFile, '1');
      } catch {
        // Fall through to signalling each member.
      }
    } else if (this.freezer) {
      // Frozen members cannot fork between the read of the list and the kill.
      try {
        write(join(this.freezer, 'freezer.state'), 'FROZEN');
      } catch {
        // Signal anyway.
      }
    }
    signalEach(this.members(), 'SIGKILL');
    if (this.freezer) {
      try {
        write(join(this.freezer, 'freezer.state'), 'THAWED');
      } catch {
        // Already gone.
      }
    }
    return waitUntilGone(() => {
      const left = this.members();
      signalEach(left, 'SIGKILL');
      return left;
    }, timeoutMs);
  }

  /** Synchronous best effort for a host that is exiting: `cgroup.kill`, else SIGKILL each member. */
  killNow(): void {
    if (this.killFile) {
      try {
        write(this.killFile, '1');
        return;
      } catch {
        // Fall through.
      }
    }
    signalEach(this.members(), 'SIGKILL');
  }

  /** How many processes the pids limit refused (v1 `pids.events` max), when known. */
  pidsLimitHits(): number {
    const dir = this.dirs.get('pids') ?? this.dirs.get('v2');
    try {
      return Number(/max (\d+)/.exec(readFileSync(join(dir!, 'pids.events'), 'utf8'))?.[1] ?? 0);
    } catch {
      return 0;
    }
  }

  /** Whether the memory limit killed something (v1 `memory.oom_control` / v2 `memory.events`). */
  oomKills(): number {
    for (const [key, file, re] of [
      ['memory', 'memory.oom_control', /oom_kill (\d+)/],
      ['v2', 'memory.events', /oom_kill (\d+)/],
    ] as const) {
      const dir = this.dirs.get(key);
      if (!dir) continue;
      try {
        return Number(re.exec(readFileSync(join(dir, file), 'utf8'))?.[1] ?? 0);
      } catch {
        // Not available.
      }
    }
    return 0;
  }

  /**
   * Remove the run's directories (they must be empty: call {@link killAll} first). A v2 cgroup
   * whose last members are still being reaped refuses rmdir (EBUSY) while `cgroup.events` says
   * `populated 1`: wait for the kernel's change event on that file (up to `timeoutMs`), then
   * remove. Returns the directories left behind (the next host start sweeps them, see
   * {@link sweepRunCgroups}).
   */
  async release(timeoutMs = 2_000): Promise<string[]> {
    const left: string[] = [];
    // Children before parents is not an issue (one level); v2 first: its populated flag is the signal.
    for (const dir of this.dirs.values()) {
      if (!(await removeWhenEmpty(dir, timeoutMs))) left.push(dir);
    }
    return left;
  }

  /**
   * Remove the directories of a cgroup no process ever joined (the machine probe's), at once: an asynchronous
   * release could be cut short by the process exiting, and such a directory is never swept (its name is not a
   * run's). Returns the directories left behind.
   */
  discard(): string[] {
    const left: string[] = [];
    for (const dir of this.dirs.values()) {
      try {
        rmdirSync(dir);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') left.push(dir);
      }
    }
    return left;
  }
}

/**
 * rmdir a cgroup directory, waiting (event-driven) for `populated 0` when its cgroup.events says it is still
 * populated.
 */
async function removeWhenEmpty(dir: string, timeoutMs: number): Promise<boolean> {
  const tryRemove = () => {
    try {
      rmdirSync(dir);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'ENOENT';
    }
  };
  if (tryRemove()) return true;
  const events = join(dir, 'cgroup.events');
  if (!existsSync(events)) return false; // v1: no populated notification; the sweep removes it later
  return new Promise<boolean>((resolve) => {
    let watcher: ReturnType<typeof watch> | undefined;
    const done = (ok: boolean) => {
      clearTimeout(timer);
      watcher?.close();
      resolve(ok);
    };
    const check = () => {
      try {
        if (/^populated 0$/m.test(readFileSync(events, 'utf8')) && tryRemove()) done(true);
      } catch {
        done(tryRemove());
      }
    };
    const timer = setTimeout(() => done(tryRemove()), timeoutMs);
    try {
      watcher = watch(events, check);
      watcher.on('error', () => undefined);
    } catch {
      // Cannot watch: the timeout's last try decides.
    }
    check(); // it may have emptied between the first try and the watch
  });
}

/** The names of the directories under this process's `<hierarchy>/paddock/`, over every hierarchy (each once). */
export function runCgroupNames(layout = readCgroupLayout()): string[] {
  const names = new Set<string>();
  for (const parent of [...(layout.v2 ? [layout.v2] : []), ...layout.v1.values()].map((d) => join(d, 'paddock'))) {
    try {
      for (const e of readdirSync(parent, { withFileTypes: true })) if (e.isDirectory()) names.add(e.name);
    } catch {
      // No such hierarchy, or no run ever made one.
    }
  }
  return [...names];
}

/** What {@link sweepRunCgroups} removed and left. */
export interface CgroupSweep {
  removed: string[];
  kept: number;
}

/**
 * Remove empty per-run cgroup directories under this process's `<hierarchy>/paddock/` whose run
 * this store knows is over (`ended(runId)`). Several hosts (other data folders, other users' test
 * runs) share that parent, and a live run's cgroup is empty between its creation and its runner's
 * join, so a directory is never removed on its age or emptiness alone: run ids are random, so a
 * run this store saw end belongs to no one else. (The kernel also refuses rmdir of a cgroup that
 * has members.) Directories of runs of another data folder are that folder's host's to sweep.
 */
export function sweepRunCgroups(ended: (runId: string) => boolean, layout = readCgroupLayout()): CgroupSweep {
  const sweep: CgroupSweep = { removed: [], kept: 0 };
  const parents = [...(layout.v2 ? [layout.v2] : []), ...layout.v1.values()].map((d) => join(d, 'paddock'));
  for (const parent of new Set(parents)) {
    let names: string[];
    try {
      names = readdirSync(parent, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      continue;
    }
    for (const name of names) {
      const runId = RUN_ID_PREFIX.exec(name)?.[1];
      if (!runId || !ended(runId)) {
        sweep.kept += 1;
        continue;
      }
      const dir = join(parent, name);
      try {
        rmdirSync(dir);
        sweep.removed.push(dir);
      } catch {
        sweep.kept += 1; // still populated, or gone already
      }
    }
  }
  return sweep;
}

/** The run a cgroup belongs to (newRunId: `run_<uuid>`). */
const RUN_ID_PREFIX = /^(run_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?:-mcp-.*)?$/;

/** The launch-wrapper prefix that moves the runner into `procsFiles` before it execs the command. */
export function joinCgroupsPrefix(procsFiles: readonly string[]): string[] {
  if (procsFiles.length === 0) return [];
  return [
    '/bin/sh',
    '-c',
    'while [ "$1" != "--" ]; do echo $$ > "$1" || exit 97; shift; done; shift; exec "$@"',
    'paddock-cgroup-join',
    ...procsFiles,
    '--',
  ];
}

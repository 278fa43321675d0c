// The cluster campaign's hosts: real `paddock serve` processes (the built command, bin/paddock.js → dist/), each on
// its own data folder, all on one PostgreSQL database, each with a short lease; started, SIGKILLed and started again.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { applyConfig } from '../../../host/bindings/apply.js';
import { parseLimits } from '../../../host/config/limits.js';
import { configureContainer } from '../../../host/di/configure.js';
import { TOKENS } from '../../../host/di/tokens.js';
import { discoverRunners } from '../../../host/plugins/catalog.js';
import { createApiToken } from '../../../host/state/apiTokens.js';
import { FIXTURE_RUNNERS } from '../../helpers/host.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
/** The platform the campaign's binding routes. */
export const PLATFORM = 'cluster';

/** What every host of the campaign shares. */
export interface ClusterSetup {
  databaseUrl: string;
  leaseMs: number;
  /** The hosts' `PADDOCK_LOG_LEVEL` (warn unless the campaign's `--log-level` says otherwise). */
  logLevel?: string;
}

/** One host: its name (`A`, `B`, …), data folder, and while it runs its process and URL. */
export interface ClusterHost {
  name: string;
  dataDir: string;
  url?: string;
  child?: ChildProcess;
  /** The last 64 KiB of its stderr (every start), for a violation's context. */
  stderr: string;
  starts: number;
  /** Exits the campaign did not ask for (`code`/`signal` and the stderr tail), e.g. a host that lost its lease. */
  unexpectedExits: string[];
  /** Set while the campaign kills and restarts it (nobody else may start it then). */
  held: boolean;
}

/**
 * Applies the campaign's binding (`sandbox`: its backend; a run streams `steps` updates `stepMs` apart) to the shared
 * database through a first data folder, and returns a platform token of the default tenant.
 */
export function prepareCluster(
  setup: ClusterSetup,
  binding: { sandbox: string; steps: number; stepMs: number },
): string {
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-campaign-cluster-setup-'));
  const config = {
    dataDir,
    databaseUrl: setup.databaseUrl,
    limits: parseLimits(),
    runnerDirs: [FIXTURE_RUNNERS],
    logLevel: 'silent',
    keepWorkspaces: false,
  };
  const store = configureContainer(config).resolve(TOKENS.Store);
  try {
    const bindings = [
      {
        id: 'cluster',
        runner: 'takes-its-time',
        sandbox: binding.sandbox,
        route: { platform: PLATFORM },
        config: { steps: binding.steps, stepMs: binding.stepMs },
        limits: { maxQueued: 64, maxConcurrentRuns: 64 },
      },
    ];
    applyConfig(
      store,
      { bindings },
      { catalog: discoverRunners([FIXTURE_RUNNERS]), mountRoots: [] },
      { by: 'campaign' },
    );
    return createApiToken(store, { tenant: 'default', role: 'platform', by: 'campaign' }).token;
  } finally {
    store.close();
  }
}

/** A host named `name` with a new data folder (not started). */
export function newHost(name: string): ClusterHost {
  return {
    name,
    dataDir: mkdtempSync(join(tmpdir(), `paddock-campaign-cluster-${name}-`)),
    stderr: '',
    starts: 0,
    unexpectedExits: [],
    held: false,
  };
}

/**
 * Starts `paddock serve` on the host's folder; resolves once it listens (its URL set). Its stderr is kept (the last
 * 64 KiB in memory, all of it in `<dataDir>.log`); an exit the campaign did not cause is recorded and announced.
 */
export async function startHost(
  host: ClusterHost,
  setup: ClusterSetup,
  onUnexpectedExit?: (what: string) => void,
): Promise<void> {
  const child = spawn(
    process.execPath,
    [join(REPO, 'bin/paddock.js'), 'serve', '--listen', '127.0.0.1:0', '--rate', '100000', '--burst', '100000'],
    {
      cwd: REPO,
      env: {
        ...process.env,
        PADDOCK_HOME: host.dataDir,
        PADDOCK_DATABASE_URL: setup.databaseUrl,
        PADDOCK_LEASE_MS: String(setup.leaseMs),
        PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS,
        PADDOCK_LOG_LEVEL: setup.logLevel ?? 'warn',
        NO_COLOR: '1',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  host.starts += 1;
  const log = (text: string) => {
    host.stderr = (host.stderr + text).slice(-64 * 1024);
    appendFileSync(`${host.dataDir}.log`, text); // the whole of it, kept beside the folder
  };
  log(`--- start ${host.starts} (pid ${child.pid}) at ${new Date().toISOString()}\n`);
  host.child = child;
  host.url = await new Promise<string>((resolve, reject) => {
    let thisStart = ''; // the URL is this start's: the kept stderr holds the earlier starts' too
    child.stderr!.on('data', (chunk: Buffer) => {
      log(chunk.toString());
      thisStart += chunk.toString();
      const m = /listening on (http:\/\/\S+)/.exec(thisStart);
      if (m && host.url === undefined) resolve(m[1]!);
    });
    child.once('exit', (code, signal) =>
      reject(new Error(`host ${host.name} exited ${code ?? signal} before listening:\n${host.stderr.slice(-4000)}`)),
    );
  });
  child.once('exit', (code, signal) => {
    if (host.child !== child) return; // killed or stopped by the campaign
    host.child = undefined;
    host.url = undefined;
    host.unexpectedExits.push(`exit ${code ?? signal}: ${host.stderr.slice(-3000)}`);
    onUnexpectedExit?.(`host ${host.name} ended by itself (${code ?? signal}) at ${new Date().toISOString()}`);
  });
}

/** SIGKILLs the host process alone (its runner spawner ends its runs) and waits for it to be gone. */
export async function killHost(host: ClusterHost): Promise<void> {
  const child = host.child;
  host.url = undefined;
  host.child = undefined;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await gone;
}

/** SIGTERMs the host (a clean stop: it drains, then gives its lease up); resolves with its exit code. */
export async function stopHost(host: ClusterHost): Promise<number | null> {
  const child = host.child;
  host.url = undefined;
  host.child = undefined;
  if (!child || child.exitCode !== null || child.signalCode !== null) return child?.exitCode ?? null;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  return exited;
}

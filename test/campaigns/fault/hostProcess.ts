// One host process of the fault campaign: the real CLI (`paddock run --json`) through the crash-hook entry
// test/fixtures/crashingHost.ts, bundled (test/helpers/hostBundle.ts), SIGKILLed by its own hook at a durability
// boundary (PADDOCK_TEST_CRASH_AT) or by this process after a delay, or left to finish.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

/** How the host is to die: at its N-th committed event or effect gap, after `afterMs`, or not at all. */
export type Kill = { crashAt: string } | { afterMs: number } | undefined;

/** What the host did: its exit, what it printed, and how long it lived. */
export interface HostExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
  /** When its `started` line (the run dispatched) came, if it did. */
  startedMs: number | undefined;
}

/** Options every host process of a campaign shares. */
export interface HostSetup {
  /** The bundled crash-hook entry. */
  cli: string;
  /** `paddock doctor --json`'s machine report, made once (PADDOCK_TEST_MACHINE_REPORT; see crashingHost.ts). */
  machineReport: string;
}

/** Runs `paddock <args> --data-dir <dataDir> --json` and resolves when the process is gone. */
export function runHost(setup: HostSetup, dataDir: string, args: readonly string[], kill: Kill): Promise<HostExit> {
  const started = performance.now();
  const child = spawn(process.execPath, [setup.cli, ...args, '--data-dir', dataDir, '--json'], {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH!,
      ...(setup.machineReport ? { PADDOCK_TEST_MACHINE_REPORT: setup.machineReport } : {}),
      ...(kill && 'crashAt' in kill ? { PADDOCK_TEST_CRASH_AT: kill.crashAt } : {}),
    },
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let startedMs: number | undefined;
  child.stdout.on('data', (b: Buffer) => {
    out.push(b);
    if (startedMs === undefined && b.includes('{"type":"started"')) startedMs = performance.now() - started;
  });
  child.stderr.on('data', (b: Buffer) => err.push(b));
  const timer = kill && 'afterMs' in kill ? setTimeout(() => child.kill('SIGKILL'), kill.afterMs) : undefined;
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({
        code,
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        ms: performance.now() - started,
        startedMs,
      });
    });
  });
}

import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describeRunnerEnd, runRunnerConformance, type ConformanceCheck } from '../../../sdk/testing/conformance.js';
import { spawnRunnerProcess, type RunnerTransport } from '../../../sdk/testing/transports.js';
import { HostError } from '../../errors.js';
import { validateRunnerConfig } from '../../plugins/configSchema.js';
import { checkedManifest } from '../../plugins/catalog.js';
import { runnerCommand, type RunnerCommand } from '../../plugins/resolveRunner.js';
import { buildRunnerEnv } from '../../process/envAllowlist.js';
import { killEscapees } from '../../process/runEnvScan.js';
import { newRunId } from '../../../sdk/protocol/runParams.js';
import { terminalSafe } from '../../util/terminalText.js';
import { parseJsonObjectFlag, parsePositiveInt } from '../hostFlags.js';
import type { Flags } from '../spec.js';

type Out = (text: string) => void;

/**
 * Start one runner process as the host would: its entry's command line (a TypeScript entry
 * bundled), the host's runner environment, a fresh empty working folder, its own process group.
 * Unlike a host run: no sandbox and no limits (the command's help says so).
 */
function startRunner(
  command: RunnerCommand,
  root: string,
  index: number,
  env: Record<string, string>,
): RunnerTransport {
  const work = join(root, `run-${index}`);
  for (const d of ['workspace', 'home', 'tmp']) mkdirSync(join(work, d), { recursive: true });
  // The suite reports each failed check's stderr tail and end; the terminal gets the report only.
  return spawnRunnerProcess(command.command, command.args, {
    cwd: join(work, 'workspace'),
    env: { ...env, HOME: join(work, 'home'), TMPDIR: join(work, 'tmp') },
    stderr: 'ignore',
  });
}

/**
 * `paddock runners test <dir>`: the conformance suite against a runner folder in any language.
 * Exit 0 when every check passed, 1 otherwise; a folder without a valid runner.json is a HostError (2).
 */
export async function runnersTestCommand(dirArg: string, flags: Flags, out: Out): Promise<number> {
  const dir = resolve(dirArg);
  // Its config schema is checked as the host checks it (a broken one names configSchema, not an internal error).
  const runner = checkedManifest(dir);
  const { manifest } = runner;
  const runConfig = (flag: string) => {
    const given = parseJsonObjectFlag(`--${flag}`, flags[flag] as string | undefined) ?? {};
    // The host hands a runner its config with the schema's defaults filled in: so does the suite.
    const checked = validateRunnerConfig(manifest.configSchema, given);
    if (!checked.ok)
      throw new HostError(
        'INVALID_INPUT',
        `--${flag}: ${checked.field}: ${checked.message} (the runner's configSchema in ${join(dir, 'runner.json')})`,
      );
    return checked.config;
  };
  const sampleRun = { text: (flags.text as string | undefined) ?? 'hello', config: runConfig('config') };
  const slowRun = {
    text: (flags['slow-text'] as string | undefined) ?? sampleRun.text,
    config: flags['slow-config'] !== undefined ? runConfig('slow-config') : sampleRun.config,
  };
  const stepTimeoutMs =
    flags['step-timeout'] !== undefined
      ? parsePositiveInt('--step-timeout', flags['step-timeout'] as string)
      : undefined;

  const root = mkdtempSync(join(tmpdir(), 'paddock-runners-test-'));
  try {
    const command = await runnerCommand(runner, root);
    // A run id of this command alone: every process its runners start carries it in PADDOCK_RUN_ID, which is how the
    // ones that left their process group (setsid, daemons) are found afterwards.
    const runId = newRunId();
    const env = buildRunnerEnv({ hostEnv: process.env, home: root, tmpDir: root, runId, extra: manifest.env });
    let started = 0;
    const report = await runRunnerConformance(() => startRunner(command, root, ++started, env), {
      sampleRun,
      slowRun,
      stepTimeoutMs,
    });
    const leftovers = await leftoverProcesses(runId);
    if (leftovers) {
      report.checks.push(leftovers);
      report.failures.push(`${leftovers.name}: ${leftovers.detail}`);
      report.passed = false;
    }
    const result = {
      runner: { id: manifest.id, version: manifest.version },
      dir,
      command: [command.command, ...command.args],
      passed: report.passed,
      checks: report.checks,
      failures: report.failures,
    };
    if (flags.json) out(JSON.stringify(result));
    else out(renderReport(result));
    return report.passed ? 0 : 1;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/**
 * The processes the runners left behind once the suite stopped them (they escaped the process group the suite kills),
 * killed, as a failed check; undefined when none was left. Found by PADDOCK_RUN_ID: a process that re-execs with an
 * empty environment is not found (no sandbox or cgroup here, unlike a host run).
 */
async function leftoverProcesses(runId: string): Promise<ConformanceCheck | undefined> {
  const started = Date.now();
  const { found, survivors } = await killEscapees(runId, 2_000);
  if (found.length === 0) return undefined;
  return {
    name: 'leaves no process behind when stopped',
    ok: false,
    detail:
      `${found.length} process(es) the runners started outlived them (left the process group, e.g. setsid): ` +
      `killed${survivors.length > 0 ? `, ${survivors.length} still alive (pids ${survivors.join(', ')})` : ''}`,
    durationMs: Date.now() - started,
  };
}

/** The human report: one line per check, a failed one with its reason and the runner's stderr. */
function renderReport(r: {
  runner: { id: string; version: string };
  dir: string;
  passed: boolean;
  checks: ConformanceCheck[];
}): string {
  const passed = r.checks.filter((c) => c.ok).length;
  // Runner text (ids, details, stderr) is untrusted: shown through terminalSafe.
  return [
    `conformance of runner ${terminalSafe(r.runner.id)} ${terminalSafe(r.runner.version)} (${r.dir})`,
    ...r.checks.flatMap((c) => [
      `  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name} (${c.durationMs} ms)`,
      ...(c.ok ? [] : [`       why: ${terminalSafe(c.detail ?? '')}`]),
      ...(c.ended ? [`       runner process: ${terminalSafe(describeRunnerEnd(c.ended))}`] : []),
      ...(c.stderrTail
        ? [
            '       runner stderr (tail):',
            ...terminalSafe(c.stderrTail, true)
              .split('\n')
              .map((l) => `         ${l}`),
          ]
        : []),
    ]),
    `${passed}/${r.checks.length} checks passed${r.passed ? '' : ' — FAILED'}`,
  ].join('\n');
}

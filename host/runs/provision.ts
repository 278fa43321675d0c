import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import type { Logger } from 'pino';
import type { WireBindingInput, Resume } from '../../sdk/protocol/types.js';
import { insideRoots } from '../util/insideRoots.js';
import type { HostConfig } from '../config/hostConfig.js';
import type { Gateway, GatewayRunHandle } from '../gateway/gateway.js';
import { KB_MCP_SERVER } from '../gateway/mcp/kbToolNames.js';
import { HARNESS_DIR } from '../harness/harnesses.js';
import { runnerCommand, type RunnerCommand } from '../plugins/resolveRunner.js';
import { buildRunnerEnv } from '../process/envAllowlist.js';
import type { RunnerLaunch } from '../process/spawnRunner.js';
import type { WarmProcess } from './warmSlot.js';
import { tenantOf } from '../config/tenant.js';
import { startEgressProxy, type EgressProxy } from '../sandbox/egressProxy.js';
import { egressBeyondList, wantsEgressProxy } from '../policy/egressReach.js';
import { sandboxBackend, type PreparedSandbox } from '../sandbox/backend.js';
import { forgetMachineProbe, probeMachine, type MachineReport } from '../sandbox/probe.js';
import type { RunIdentity } from '../sandbox/runIdentity.js';
import { mountRunDiskQuota, type RunDiskQuota } from '../sandbox/runDiskQuota.js';
import { runSocketPath } from '../sandbox/runSockets.js';
import { RunChanges } from '../changes/runChanges.js';
import type { Redactor } from '../secrets/redactor.js';
import { performEffect, performEffectAsync } from '../state/effects.js';
import { noteSkillChanged } from '../state/skillDigests.js';
import type { Store } from '../state/store.js';
import { sessionHistory } from './history.js';
import type { OpenRunJournal, QueuedRun } from './journal.js';
import { materializeGrants, type MaterializedGrants } from './materialize.js';
import type { RunPlan } from './plan.js';
import { clearRunSetIdBits, giveToRunIdentity } from '../sandbox/runIdentityFiles.js';
import { runSandboxRequest } from '../sandbox/runSandbox.js';
import type { checkSkills } from './skills.js';
import type { Containment } from '../sandbox/containment.js';
import { createRunWorkspace, removeRunWorkspace, sessionDir, type RunWorkspace } from './workspace.js';

/** What provisioning uses: host-wide services. */
export interface ProvisionDeps {
  config: HostConfig;
  store: Store;
  log: Logger;
  redactor: Redactor;
  gateway: Gateway;
  /** The machine the sandbox is made on (default: probed). */
  machine?: () => MachineReport;
}

/** The run to provision. */
export interface ProvisionInput {
  queued: QueuedRun;
  plan: RunPlan;
  journal: OpenRunJournal;
}

/** Everything a run got before its runner starts (docs/run-pipeline.md, "provision and release"). */
export interface Provisioned {
  command: RunnerCommand;
  sessionFolder: string;
  workspace: RunWorkspace & { granted: MaterializedGrants };
  disk?: RunDiskQuota;
  /** The run's file changes: its writable folders as they were before the runner started (host/changes/). */
  changes: RunChanges;
  skills: ReturnType<typeof checkSkills>;
  egressSocket?: string;
  /** The run's egress proxy, when it has one: the run's policy is set over it before the runner starts. */
  egress?: EgressProxy;
  gateway?: GatewayRunHandle;
  sandbox: PreparedSandbox;
  /** The binding as the runner sees it. */
  wire: WireBindingInput;
  resume: Resume | undefined;
  /** Interrupted runs whose recovery this run is told about. */
  recoveryDelivered: string[];
  /** The started, initialized runner process the run took from its binding's warm pool (docs/warm-pool.md). */
  warm?: WarmProcess;
  /** Hand the launch to the supervisor: from now on the run's cgroup is the supervisor's to empty and remove. */
  launch(): { launch: RunnerLaunch; containment?: Containment };
  /** Undo exactly what was provisioned, in reverse order, once (never throws: a failed undo is logged). */
  release(): Promise<void>;
}

/** What the steps have made so far; each step fills its part and registers its undo. */
export interface ProvisionDraft extends Partial<Omit<Provisioned, 'launch' | 'release'>> {
  readonly deps: ProvisionDeps;
  readonly input: ProvisionInput;
  readonly machine: MachineReport;
  /** The host uid a bwrap run's files belong to, when the host maps it to a dedicated one (runs as root). */
  runIds?: RunIdentity;
  env?: Record<string, string>;
  harnessDir?: string;
  readPaths?: string[];
  /** Set once the supervisor owns the launch. */
  launched?: boolean;
  /** Register the undo of what a step just made (run in reverse order by release). */
  onRelease(step: string, undo: () => void | Promise<void>): void;
}

/** One named provisioning step. */
export interface ProvisionStep {
  name: string;
  run(draft: ProvisionDraft): void | Promise<void>;
}

/** A field a step should have filled. */
export function need<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`provisioning: ${what} was not provisioned (a step is missing)`);
  return value;
}

/** The runner's command line (a TypeScript entry is bundled, cached by content: nothing to undo). */
const command: ProvisionStep = {
  name: 'command',
  run: async (d) => {
    d.command = await runnerCommand(d.input.plan.runner, join(d.deps.config.dataDir, 'bundles'));
  },
};

/** What the session tells this run: its harness's pointers and every interruption not yet reported. */
const session: ProvisionStep = {
  name: 'session',
  run: (d) => {
    const { store, config } = d.deps;
    const { sessionId } = d.input.queued;
    const before = store.sessionControl(sessionId);
    d.sessionFolder = sessionDir(config.dataDir, sessionId);
    // Every interruption not yet reported goes to this run, once (the latest one names the run).
    const pending = before.pendingRecovery;
    const latest = pending.at(-1);
    d.recoveryDelivered = pending.map((p) => p.runId);
    d.resume =
      before.external || latest
        ? {
            external: before.external ?? undefined,
            recovery: latest
              ? {
                  interruptedRunId: latest.runId,
                  summary: pending.map((p) => `run ${p.runId} was interrupted: ${p.reason}`).join('; '),
                  effects: pending.flatMap((p) => p.effects),
                }
              : undefined,
          }
        : undefined;
  },
};

/**
 * The workspace: the disk quota first (the workspace and the session folder become their own
 * size-limited filesystems before anything is written into them; docs/security-model.md, "Disk
 * quota"), then the folders and the granted copies, as one logged effect.
 */
const workspace: ProvisionStep = {
  name: 'workspace',
  run: async (d) => {
    const { store, config, log } = d.deps;
    const { queued, plan } = d.input;
    const { runId, sessionId } = queued;
    const sessionFolder = need(d.sessionFolder, 'the session folder');
    const backend = sandboxBackend(plan.binding.sandbox);
    d.runIds = backend.runIdentity(d.machine);
    const root = join(config.dataDir, 'workspaces', runId);
    // Half built (a copy, link or grant failed part-way), or built but its record refused (the store lost a moment):
    // nothing of it stays. The folder is this run's alone (a fresh run id), so removing it removes exactly what was
    // made; links in it are not followed.
    const discard = async () => {
      try {
        await d.disk?.release({ keepWorkspace: false });
      } catch (releaseError) {
        log.error({ runId, err: releaseError }, "could not release a half-built workspace's disk quota");
      }
      d.disk = undefined;
      try {
        removeRunWorkspace({ root });
      } catch (removeError) {
        // Left for the start-up sweep (e.g. a quota mount that would not go); the first error is the run's.
        log.error({ runId, err: removeError }, 'could not remove a half-built workspace');
      }
    };
    let built = false;
    const ws = await performEffectAsync(
      store,
      sessionId,
      runId,
      { kind: 'workspace.create', target: runId, probe: { path: root } },
      async () => {
        try {
          if (d.machine.diskQuota.available) {
            d.disk = await mountRunDiskQuota(
              d.machine.diskQuota,
              config.dataDir,
              { runId, sessionId },
              { workspaceRoot: root, sessionFolder },
              plan.access.limits,
            );
          }
          const created = createRunWorkspace(config.dataDir, runId);
          const made = {
            ...created,
            granted: materializeGrants(
              created,
              plan.access,
              plan.resources,
              plan.binding.workspace,
              config.mountRoots ?? [],
              backend.bindsGrants,
            ),
          };
          built = true;
          return made;
        } catch (error) {
          await discard();
          throw error;
        }
      },
    ).catch(async (error: unknown) => {
      // Its record refused after it was built: a run whose start failed so kept its workspace mounted (attack 7, F1).
      if (built) await discard();
      throw error;
    });
    d.workspace = ws;
    releaseWorkspaceLater(d, ws);
  },
};

/**
 * Register the undo of a run's workspace (its own, or a warm slot's it took): setuid/setgid bits cleared, the
 * disk quota released, the folder removed as a logged effect (kept with `keepWorkspaces`).
 */
export function releaseWorkspaceLater(d: ProvisionDraft, ws: NonNullable<ProvisionDraft['workspace']>): void {
  const { store, config, log } = d.deps;
  const { queued, journal } = d.input;
  const { runId, sessionId } = queued;
  const sessionFolder = need(d.sessionFolder, 'the session folder');
  const rwSources = ws.granted.binds.filter((b) => !b.readOnly).map((b) => b.source);
  d.onRelease('workspace', async () => {
    // Nothing the run leaves where the host or a user may execute it keeps a setuid/setgid bit.
    try {
      const cleared = clearRunSetIdBits(
        [...rwSources, sessionFolder, ...(config.keepWorkspaces ? [ws.root] : [])],
        d.runIds,
      );
      if (cleared.length > 0) {
        journal.audit('run.setid_cleared', 'host', { files: cleared });
        log.warn({ runId, files: cleared }, 'setuid/setgid bits cleared from files the run left');
      }
    } catch (error) {
      // Never lose the run's outcome (nor the cleanup below) over it: logged, and audited when the store can.
      log.error({ runId, err: error }, 'clearing setuid/setgid bits after the run failed, or auditing it');
      try {
        journal.audit('run.setid_cleared', 'host', { error: String(error) });
      } catch (auditError) {
        log.error({ runId, err: auditError }, 'could not audit the failed setuid/setgid clearing');
      }
    }
    try {
      await d.disk?.release({ keepWorkspace: config.keepWorkspaces === true });
    } catch (error) {
      // Left mounted: the next host start unmounts it (the outcome stands).
      log.error({ runId, err: error }, "could not release the run's disk quota");
    }
    if (!config.keepWorkspaces) {
      try {
        performEffect(
          store,
          sessionId,
          runId,
          { kind: 'workspace.remove', target: runId, probe: { path: ws.root } },
          () => removeRunWorkspace(ws),
        );
      } catch (error) {
        // The store could not log the removal (e.g. full): remove anyway, so a run that filled the disk
        // does not keep it full until the next start's sweep. Removing twice is harmless.
        log.error({ runId, err: error }, 'could not log the workspace removal; removing it unlogged');
        removeRunWorkspace(ws);
      }
    }
  });
}

/**
 * The snapshot of the run's writable folders (the workspace, read-write granted mounts bound into it) that its end is
 * compared with: what the runner writes without the host (a harness's tools, its shell) is recorded with a diff
 * (docs/approvals.md, "Writes and their diffs"). Bounded by host/changes/caps.ts; nothing to undo.
 */
const changes: ProvisionStep = {
  name: 'changes',
  run: async (d) => {
    const { journal } = d.input;
    const ws = need(d.workspace, 'the workspace');
    // A bound mount is seen under its path in the workspace; on the host that path is an empty mount point.
    const roots = [
      { label: '', path: ws.root },
      ...ws.granted.binds
        .filter((b) => !b.readOnly)
        .map((b) => ({ label: relative(ws.root, b.target), path: b.source })),
    ];
    d.changes = new RunChanges(journal, (text) => d.deps.redactor.text(text), roots);
    await d.changes.begin();
  },
};

/** The granted skills' copies: identified, made read-only, a changed one audited and told to the chat. */
const skills: ProvisionStep = {
  name: 'skills',
  run: async (d) => {
    const { journal, plan } = d.input;
    const copies = need(d.workspace, 'the workspace').granted.skills;
    // The skill reader (and its YAML parser) loads only for a run that is granted skills.
    if (copies.length === 0) {
      d.skills = { handles: [], binds: [] };
      return;
    }
    const { checkSkills } = await import('./skills.js');
    d.skills = checkSkills(d.deps.store, copies, plan.binding.sandbox, (changed) => {
      journal.audit('skill.changed', 'host', changed);
      // Kept on the skill's row for the console (GET /v1/skills) until the skill is applied again.
      noteSkillChanged(d.deps.store, {
        id: changed.skill,
        digest: changed.digest,
        at: new Date().toISOString(),
        runId: d.input.queued.runId,
      });
      journal.notice(
        'warn',
        `skill ${changed.skill} changed since it was applied (${changed.recorded ?? 'never recorded'} → ` +
          `${changed.digest}); the run got the current content`,
      );
    });
  },
};

/**
 * The run's only network door, when its binding lists destinations or lets its policy allow others (bwrap only:
 * the process backend has the host's network anyway, and says so).
 */
const egress: ProvisionStep = {
  name: 'egress',
  run: async (d) => {
    const { binding, runner } = d.input.plan;
    if (!sandboxBackend(binding.sandbox).startsEgressProxy(wantsEgressProxy(binding))) return;
    const { dataDir } = d.deps.config;
    const socket = runSocketPath(dataDir, d.input.queued.runId, 'egress');
    mkdirSync(dirname(socket), { recursive: true, mode: 0o700 });
    const proxy = await startEgressProxy(
      socket,
      { allow: binding.network.egress, allowPrivate: binding.network.allowPrivate },
      (decision) =>
        d.input.journal.audit(
          decision.allowed ? 'egress.allowed' : 'egress.denied',
          `runner:${runner.manifest.id}`,
          decision,
        ),
    );
    d.egressSocket = socket;
    d.egress = proxy;
    d.onRelease('egress', () => proxy.close());
  },
};

/** The host gateway: models, knowledge bases and MCP tools, behind a token that dies with the run. */
const gateway: ProvisionStep = {
  name: 'gateway',
  run: async (d) => {
    const { queued, plan, journal } = d.input;
    const { access, binding, runner } = plan;
    if (access.models.length + access.knowledgeBases.length + access.mcpServers.length === 0) return;
    const handle = await d.deps.gateway.openRun({
      claims: { runId: queued.runId, sessionId: queued.sessionId, bindingId: binding.id, runnerId: runner.manifest.id },
      tenant: tenantOf(binding),
      access,
      resources: plan.resources,
      budget: binding.limits,
      backend: binding.sandbox,
      sandboxLimits: access.limits,
      notice: (level, message) => journal.notice(level, message),
    });
    d.gateway = handle;
    d.onRelease('gateway', () => handle.close());
  },
};

/** The runner's environment (an allowlist), the read paths checked again, the files given to the run identity. */
const env: ProvisionStep = {
  name: 'env',
  run: async (d) => {
    const { config } = d.deps;
    const { queued, plan } = d.input;
    const ws = need(d.workspace, 'the workspace');
    const runnerEnv = buildRunnerEnv({
      hostEnv: process.env,
      home: ws.home,
      tmpDir: ws.tmp,
      runId: queued.runId,
      extra: plan.runner.manifest.env,
    });
    if (d.gateway)
      Object.assign(runnerEnv, {
        PADDOCK_RUN_TOKEN: d.gateway.token,
        PADDOCK_GATEWAY_URL: d.gateway.baseUrl,
        NO_PROXY: '127.0.0.1,localhost',
        no_proxy: '127.0.0.1,localhost',
      });
    // The pinned harness CLIs (read-only under bwrap, see runSandbox.ts).
    const harnessDir = config.harnessDir ?? HARNESS_DIR;
    if (existsSync(harnessDir)) runnerEnv.PADDOCK_HARNESS_DIR = harnessDir;
    const readPaths = grantedReadPaths(plan.binding.readPaths, config.mountRoots ?? []);
    // Copies the host made carry no setuid bits; what the run must use is its identity's (or refused, naming the
    // grant).
    await giveToRunIdentity(d.runIds, {
      dataDir: config.dataDir,
      workspace: ws.root,
      sessionFolder: need(d.sessionFolder, 'the session folder'),
      sockets: [d.egressSocket, d.gateway?.socketPath],
      binds: ws.granted.binds,
      readPaths,
      bundle: need(d.command, 'the command').bundle,
    });
    Object.assign(d, { env: runnerEnv, harnessDir, readPaths });
  },
};

/** The sandbox launch (cgroup, launch file): released here until the supervisor takes it. */
const sandbox: ProvisionStep = {
  name: 'sandbox',
  run: (d) => {
    const { queued, plan } = d.input;
    const { binding, runner, access } = plan;
    const ws = need(d.workspace, 'the workspace');
    const cmd = need(d.command, 'the command');
    const sessionFolder = need(d.sessionFolder, 'the session folder');
    const prepared = sandboxBackend(binding.sandbox).prepare(
      {
        ...runSandboxRequest({
          backend: binding.sandbox,
          runId: queued.runId,
          launch: { command: cmd.command, args: cmd.args, cwd: ws.root, env: need(d.env, 'the environment') },
          workspace: ws.root,
          runnerDir: runner.dir,
          bundle: cmd.bundle,
          harnessDir: need(d.harnessDir, 'the harness folder'),
          readPaths: need(d.readPaths, 'the read paths'),
          binds: [
            ...ws.granted.binds,
            { source: sessionFolder, target: sessionFolder, readOnly: false },
            ...need(d.skills, 'the skills').binds,
          ],
          limits: access.limits,
          egressSocket: d.egressSocket,
          gatewaySocket: d.gateway?.socketPath,
          egress: {
            allow: binding.network.egress,
            allowPrivate: binding.network.allowPrivate,
            beyondList: egressBeyondList(binding),
          },
        }),
        disk: d.disk?.applied,
      },
      d.machine,
    );
    d.sandbox = prepared;
    d.onRelease('sandbox', async () => {
      if (d.launched) return;
      if (prepared.containment) await prepared.containment.release();
      else prepared.discard();
    });
  },
};

/** The binding as the runner sees it: grants, handles, history, workspace, gateway URLs, limits. */
const wire: ProvisionStep = {
  name: 'wire',
  run: (d) => {
    const { store, redactor } = d.deps;
    const { queued, plan } = d.input;
    const { binding, runner, access } = plan;
    const ws = need(d.workspace, 'the workspace');
    const gw = d.gateway;
    const limits = access.limits;
    d.wire = {
      bindingId: binding.id,
      runner: { id: runner.manifest.id, version: runner.manifest.version },
      config: binding.config,
      hostRequests: access.hostRequests,
      models: access.models,
      knowledgeBases: access.knowledgeBases,
      mcpServers: access.mcpServers,
      skills: need(d.skills, 'the skills').handles,
      artifacts: ws.granted.artifacts,
      mounts: ws.granted.mounts,
      ...(access.state !== 'none' ? { stateScope: access.state } : {}),
      // No grant, no read: a long conversation's log is not read at every run start.
      history:
        access.history === 'none'
          ? []
          : sessionHistory(store.historyEvents(queued.sessionId), queued.runId, access.history, (text) =>
              redactor.text(text),
            ),
      workspace: {
        root: ws.root,
        in: ws.in,
        out: ws.out,
        tmp: ws.tmp,
        session: need(d.sessionFolder, 'the session folder'),
      },
      ...(gw
        ? {
            gateway: {
              baseUrl: gw.baseUrl,
              anthropicBaseUrl: gw.baseUrl,
              openaiBaseUrl: `${gw.baseUrl}/v1`,
              mcp: Object.fromEntries<string>([
                ...access.mcpServers.map((m): [string, string] => [m.id, `${gw.baseUrl}/mcp/${m.id}`]),
                // Granted knowledge bases as one host-served MCP server of search tools (docs/gateway.md).
                ...(access.knowledgeBases.length
                  ? [[KB_MCP_SERVER, `${gw.baseUrl}/mcp/${KB_MCP_SERVER}`] as [string, string]]
                  : []),
              ]),
              tokenEnv: 'PADDOCK_RUN_TOKEN',
            },
          }
        : {}),
      limits: {
        wallClockMs: limits.wallClockMs,
        idleMs: limits.idleMs,
        maxUpdates: limits.maxUpdates,
        maxEventBytes: limits.maxEventBytes,
        diskBytes: limits.diskBytes,
        inodes: limits.inodes,
      },
    };
  },
};

/** The provisioning steps of a run, in order (release undoes them in reverse). */
export const PROVISION_STEPS: readonly ProvisionStep[] = [
  command,
  session,
  workspace,
  changes,
  skills,
  egress,
  gateway,
  env,
  sandbox,
  wire,
];

/**
 * Provision a run: run `steps` in order; if one throws, undo what the earlier ones made (in
 * reverse) and rethrow. The result's `release()` undoes it all, once, on every path.
 */
export async function provision(
  deps: ProvisionDeps,
  input: ProvisionInput,
  steps: readonly ProvisionStep[] = PROVISION_STEPS,
): Promise<Provisioned> {
  const undos: { step: string; undo: () => void | Promise<void> }[] = [];
  const draft: ProvisionDraft = {
    deps,
    input,
    machine: (deps.machine ?? probeMachine)(),
    onRelease: (step, undo) => void undos.push({ step, undo }),
  };
  let released: Promise<void> | undefined;
  const release = () =>
    (released ??= (async () => {
      for (const { step, undo } of undos.reverse()) {
        try {
          await undo();
        } catch (error) {
          // One undo failing must not keep the others from running (a start-up sweep catches leftovers).
          deps.log.error({ runId: input.queued.runId, step, err: error }, 'releasing what a run was given failed');
        }
      }
    })());
  try {
    for (const step of steps) await step.run(draft);
    return {
      command: need(draft.command, 'the command'),
      sessionFolder: need(draft.sessionFolder, 'the session folder'),
      workspace: need(draft.workspace, 'the workspace'),
      disk: draft.disk,
      changes: need(draft.changes, 'the change snapshot'),
      skills: need(draft.skills, 'the skills'),
      egressSocket: draft.egressSocket,
      egress: draft.egress,
      gateway: draft.gateway,
      sandbox: need(draft.sandbox, 'the sandbox'),
      wire: need(draft.wire, 'the wire binding'),
      resume: draft.resume,
      recoveryDelivered: need(draft.recoveryDelivered, 'the recovery record'),
      warm: draft.warm,
      launch: () => {
        draft.launched = true;
        return { launch: draft.sandbox!.launch, containment: draft.sandbox!.containment };
      },
      release,
    };
  } catch (error) {
    // A step may have failed because the machine no longer does what its kept probe said (probeCache.ts).
    forgetMachineProbe();
    await release();
    throw error;
  }
}

/**
 * The binding's read paths, checked again now (roots or links under them may have changed since apply), as real paths.
 */
export function grantedReadPaths(paths: string[], roots: readonly string[]): string[] {
  return paths.map((path) => {
    const real = insideRoots(path, roots);
    if (!real) throw new Error(`read path ${path} is no longer an existing path under an allowed mount root`);
    return real;
  });
}

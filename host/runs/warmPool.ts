import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { HostConfig } from '../config/hostConfig.js';
import { tenantOf } from '../config/tenant.js';
import { HARNESS_DIR } from '../harness/harnesses.js';
import { runnerCommand, type RunnerCommand } from '../plugins/resolveRunner.js';
import { sandboxBackend } from '../sandbox/backend.js';
import { probeMachine, type MachineReport } from '../sandbox/probe.js';
import { performEffect } from '../state/effects.js';
import { materializeGrants } from './materialize.js';
import type { RunPlan } from './plan.js';
import {
  need,
  provision,
  PROVISION_STEPS,
  releaseWorkspaceLater,
  type ProvisionDeps,
  type ProvisionInput,
  type Provisioned,
  type ProvisionStep,
} from './provision.js';
import { RunChanges } from '../changes/runChanges.js';
import { grantsNothingIntoWorkspace, startSlot, workspaceRoots, type WarmSlot } from './warmSlot.js';

/** How long a slot may wait for a run before it is replaced (a stale bundle or config does not live on). */
export const WARM_IDLE_MS = 10 * 60_000;

/**
 * Why a plan's runs cannot take a warm slot (docs/warm-pool.md, "What is per run"); undefined: they can. Only what
 * can be bound when a run takes the slot may differ between runs of one pool.
 */
export function warmRefusal(plan: RunPlan): string | undefined {
  const { binding, access } = plan;
  if (binding.limits.warmPool === 0) return 'the binding keeps no warm pool (limits.warmPool is 0)';
  if (!sandboxBackend(binding.sandbox).warmSlots)
    return `the ${binding.sandbox} sandbox binds the run's workspace and session folder when it starts`;
  if (access.models.length + access.knowledgeBases.length + access.mcpServers.length > 0)
    return "the run's gateway token is in its runner's environment";
  return undefined;
}

/**
 * The pool key: a digest of everything that shapes a slot's process (tenant, the whole binding, the run's access,
 * the runner and its command line, the harness folder). Runs share a pool only when all of it is equal.
 */
export function warmKey(plan: RunPlan, command: RunnerCommand, config: HostConfig): string {
  const { binding, runner, access } = plan;
  const shape = {
    tenant: tenantOf(binding),
    binding,
    access,
    runner: { id: runner.manifest.id, version: runner.manifest.version, dir: runner.dir, env: runner.manifest.env },
    command,
    harnessDir: config.harnessDir ?? HARNESS_DIR,
    mountRoots: config.mountRoots ?? [],
  };
  return createHash('sha256').update(JSON.stringify(shape)).digest('hex');
}

/** The pools of one host process. */
const openPools = new Set<WarmPools>();

/** Stop every slot of every pool of this process (host shutdown). */
export async function closeAllWarmPools(): Promise<void> {
  await Promise.all([...openPools].map((p) => p.close()));
}

/** One key's slots. */
interface Pool {
  bindingId: string;
  slots: Set<WarmSlot>;
  /** Slots being started now (counted against the size). */
  starting: number;
  retire?: NodeJS.Timeout;
}

/**
 * The warm pools of a host (docs/warm-pool.md): per key, up to the binding's `limits.warmPool` started and
 * initialized runner processes; a run takes one through {@link provision} (or starts cold), each take refills.
 */
export class WarmPools {
  private readonly pools = new Map<string, Pool>();
  private closed = false;
  /** Slot starts under way (what {@link filled} waits for). */
  private readonly starts = new Set<Promise<unknown>>();
  /** `retired` (pid): an idle slot left its pool without a run (died, spoke, stopped). For tests and benches. */
  readonly events = new EventEmitter();

  constructor(
    private readonly config: HostConfig,
    private readonly log: Logger,
    private readonly machine: () => MachineReport = probeMachine,
  ) {
    openPools.add(this);
  }

  /** Idle slots of every pool (for tests and benches). */
  idleCount(): number {
    let n = 0;
    for (const pool of this.pools.values()) for (const slot of pool.slots) if (slot.idle()) n += 1;
    return n;
  }

  /** Slot starts under way (for tests and benches). */
  startingCount(): number {
    return this.starts.size;
  }

  /** Idle slots' process ids, of one binding or all (for tests and benches). */
  idlePids(bindingId?: string): number[] {
    return [...this.pools.values()]
      .filter((p) => bindingId === undefined || p.bindingId === bindingId)
      .flatMap((p) => [...p.slots].filter((s) => s.idle()).map((s) => s.pid));
  }

  /** Resolves when no slot start is under way (each ended started or failed). */
  async filled(): Promise<void> {
    while (this.starts.size > 0) await Promise.allSettled([...this.starts]);
  }

  /**
   * Provision a run from a warm slot of its binding's pool, and refill the pool in the background. Undefined: the
   * run starts cold (no pool, none idle yet, or the take failed part-way — never the run's failure).
   */
  async provision(deps: ProvisionDeps, input: ProvisionInput): Promise<Provisioned | undefined> {
    const { plan } = input;
    if (this.closed || warmRefusal(plan)) return undefined;
    let command: RunnerCommand;
    try {
      command = await runnerCommand(plan.runner, join(this.config.dataDir, 'bundles'));
    } catch {
      return undefined; // the cold start fails the same way, with the run's own reason
    }
    const key = warmKey(plan, command, this.config);
    this.drainOthers(plan.binding.id, key);
    const pool = this.pools.get(key) ?? this.newPool(key, plan.binding.id);
    const slot = [...pool.slots].find((s) => s.idle());
    const proc = slot?.take();
    if (slot) pool.slots.delete(slot);
    const refill = () => {
      if (this.pools.get(key) === pool) this.fill(key, pool, plan, command);
    };
    if (!slot || !proc) {
      refill();
      return undefined;
    }
    // The replacement starts once this run's first update is out (or the run ended): a slot's start is a spawn and
    // a cgroup, synchronous work on the event loop that would otherwise come before this run's `run` and its answer.
    let refilled = false;
    const started = () => {
      if (refilled) return;
      refilled = true;
      refill();
    };
    try {
      return await provision(deps, input, warmSteps(slot, { ...proc, started }, command));
    } catch (error) {
      started();
      // provision released what the steps made (the slot's process and folders included); the run starts cold.
      this.log.warn({ runId: input.queued.runId, slot: slot.id, err: error }, 'warm slot not usable; starting cold');
      return undefined;
    }
  }

  /** Stop every slot and start no more (host shutdown). */
  async close(): Promise<void> {
    this.closed = true;
    openPools.delete(this);
    await Promise.all([...this.pools.keys()].map((key) => this.drain(key)));
    // A start under way stops its slot when it sees the pools closed: close() returns after that, so no process,
    // cgroup or mount of a slot outlives it (a refill may have begun just before, at a run's first update).
    await this.filled();
  }

  private newPool(key: string, bindingId: string): Pool {
    const pool: Pool = { bindingId, slots: new Set(), starting: 0 };
    this.pools.set(key, pool);
    return pool;
  }

  /** Start slots until the pool holds the binding's size (in the background; a failed start is logged). */
  private fill(key: string, pool: Pool, plan: RunPlan, command: RunnerCommand): void {
    const size = plan.binding.limits.warmPool;
    while (!this.closed && pool.slots.size + pool.starting < size) {
      pool.starting += 1;
      let counted = false;
      const start = startSlot({
        config: this.config,
        log: this.log,
        machine: this.machine(),
        plan,
        command,
        onGone: (gone) => {
          pool.slots.delete(gone);
          this.events.emit('retired', gone.pid);
          // A slot that died while idle is replaced, unless the pool was dropped meanwhile.
          if (this.pools.get(key) === pool) this.fill(key, pool, plan, command);
        },
      })
        .then((slot) => {
          pool.starting -= 1;
          counted = true;
          // Awaited, so filled() (and close()) return only once such a slot is gone.
          if (this.closed || this.pools.get(key) !== pool) return slot.stop();
          pool.slots.add(slot);
          this.armRetire(key, pool);
        })
        .catch((error: unknown) => {
          if (!counted) pool.starting -= 1;
          this.log.warn({ bindingId: plan.binding.id, err: error }, 'could not start a warm runner process');
        })
        .finally(() => this.starts.delete(start));
      this.starts.add(start);
    }
  }

  /** Drop a pool nobody took from for {@link WARM_IDLE_MS}: its slots are stopped; the next run fills it again. */
  private armRetire(key: string, pool: Pool): void {
    clearTimeout(pool.retire);
    pool.retire = setTimeout(() => void this.drain(key), WARM_IDLE_MS);
    pool.retire.unref();
  }

  /** A binding's pools of another key (its config or grants changed) are drained. */
  private drainOthers(bindingId: string, key: string): void {
    for (const [k, pool] of this.pools) if (pool.bindingId === bindingId && k !== key) void this.drain(k);
  }

  private async drain(key: string): Promise<void> {
    const pool = this.pools.get(key);
    if (!pool) return;
    this.pools.delete(key);
    clearTimeout(pool.retire);
    await Promise.all([...pool.slots].map((s) => s.stop()));
  }
}

/** The cold run's change snapshot step (taken at the take, grants included). */
const coldChanges = PROVISION_STEPS.find((step) => step.name === 'changes')!;

/**
 * The provisioning steps of a run that took `slot`: the slot's workspace (the run's grants copied into it, the
 * session folder's quota mounted now) and its sandbox and process instead of new ones; every other step as cold.
 */
function warmSteps(
  slot: WarmSlot,
  proc: NonNullable<ReturnType<WarmSlot['take']>>,
  started: RunnerCommand,
): ProvisionStep[] {
  // The command the slot was started with is the one just checked against the runner's files (the pool's key).
  const command: ProvisionStep = { name: 'command', run: (d) => void (d.command = started) };
  const workspace: ProvisionStep = {
    name: 'workspace',
    run: async (d) => {
      const { store, config } = d.deps;
      const { queued, plan } = d.input;
      const sessionFolder = need(d.sessionFolder, 'the session folder');
      const backend = sandboxBackend(plan.binding.sandbox);
      d.runIds = backend.runIdentity(d.machine);
      try {
        const ws = performEffect(
          store,
          queued.sessionId,
          queued.runId,
          { kind: 'workspace.create', target: queued.runId, probe: { path: slot.workspace.root } },
          () => ({
            ...slot.workspace,
            granted: materializeGrants(
              slot.workspace,
              plan.access,
              plan.resources,
              plan.binding.workspace,
              config.mountRoots ?? [],
              backend.bindsGrants,
            ),
          }),
        );
        d.disk = await slot.disk?.bind(queued.sessionId, sessionFolder);
        d.workspace = ws;
      } catch (error) {
        // Nothing of the slot was handed to the run yet: the slot goes whole.
        await slot.stop();
        throw error;
      }
      releaseWorkspaceLater(d, d.workspace);
      // Registered after the workspace's undo, so it runs first: the process is gone before its folder is.
      d.onRelease('warm process', () => (d.launched ? undefined : slot.kill()));
    },
  };
  const env: ProvisionStep = {
    name: 'env',
    run: (d) => {
      // The slot's environment was built when it started; nothing of the run may be missing from it.
      if (d.gateway || d.egressSocket) throw new Error('a warm slot cannot take a run with a gateway or egress proxy');
    },
  };
  const sandbox: ProvisionStep = {
    name: 'sandbox',
    run: (d) => {
      const prepared = slot.sandbox;
      // The report as a cold run's: the same mechanism, with the run's disk figures (docs/warm-pool.md).
      d.sandbox = { ...prepared, report: prepared.reportFor?.(d.disk?.applied ?? 'none') ?? prepared.report };
      d.warm = proc;
      // Whatever ends the run before it started (a later step threw, a release), the pool still refills.
      d.onRelease('warm refill', () => proc.started?.());
    },
  };
  const changes: ProvisionStep = {
    name: 'changes',
    run: async (d) => {
      const ws = need(d.workspace, 'the workspace');
      // The slot's snapshot stands for the run's when the take put nothing into the workspace (as a cold run's, it
      // was taken before the process started); else the workspace is snapshotted now, grants included, as before.
      const taken = grantsNothingIntoWorkspace(d.input.plan.access) ? slot.changesStart : undefined;
      if (!taken) return coldChanges.run(d);
      d.changes = new RunChanges(d.input.journal, (text) => d.deps.redactor.text(text), workspaceRoots(ws));
      await d.changes.begin(taken);
    },
  };
  const replaced: Record<string, ProvisionStep> = { command, workspace, changes, env, sandbox };
  return PROVISION_STEPS.map((step) => replaced[step.name] ?? step);
}

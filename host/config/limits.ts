import { z } from 'zod';

/** Longest delay a Node timer takes (2^31 - 1 ms): a longer one would fire after 1 ms. */
const ms = (def: number) => z.int().positive().max(2_147_483_647).default(def);
const bytes = (def: number) => z.int().positive().default(def);

/** Limits the host enforces on every run. Each field has a default; a config may lower or raise it. */
export const HostLimitsSchema = z.strictObject({
  /** From spawn to the `initialize` answer. */
  handshakeTimeoutMs: ms(10_000),
  /** From spawn to the run result. */
  wallClockMs: ms(10 * 60_000),
  /** Longest stretch with no message from the runner while a run is active. */
  idleMs: ms(2 * 60_000),
  /** After `run/cancel`, how long the runner has to answer `cancelled` before it is killed. */
  cancelGraceMs: ms(5_000),
  /** After the run: time for the `shutdown` answer, and again for an exit after stdin closes. */
  shutdownGraceMs: ms(2_000),
  /** After SIGTERM to the group, before SIGKILL. */
  termGraceMs: ms(3_000),
  /** After SIGKILL, how long to wait for /proc to show the group gone before reporting survivors. */
  killConfirmMs: ms(5_000),
  /** After the runner exits, how long to wait for the rest of its stdout (a grandchild may hold it open). */
  exitDrainMs: ms(250),
  maxStdoutBytes: bytes(64 * 1024 * 1024),
  maxStderrBytes: bytes(8 * 1024 * 1024),
  /** Longest single stdout line (one JSON-RPC message). */
  maxLineBytes: bytes(4 * 1024 * 1024),
  maxUpdates: z.int().positive().default(20_000),
  /** Sum of the sizes of all `run/update` messages of a run. */
  maxEventBytes: bytes(32 * 1024 * 1024),
  /**
   * Largest chat event the host takes (its JSON, in bytes), checked at intake — dispatch, `paddock
   * run` — before anything is stored. At most 8 MiB: the event travels in the `run` line, which a
   * runner reads with a 16 MiB line limit next to the binding and history.
   */
  maxChatEventBytes: z
    .int()
    .positive()
    .max(8 * 1024 * 1024)
    .default(1024 * 1024),
  /** How much of the end of stderr is kept with the outcome. */
  stderrTailBytes: bytes(8 * 1024),
  /** Memory of the whole run (cgroup). */
  memoryBytes: bytes(2 * 1024 * 1024 * 1024),
  /** Processes of the whole run (cgroup pids). */
  pids: z.int().positive().default(512),
  /** CPU seconds per process (RLIMIT_CPU). */
  cpuSeconds: z.int().positive().default(600),
  /** Largest file a runner may write (RLIMIT_FSIZE). */
  fileSizeBytes: bytes(1024 * 1024 * 1024),
  /** Open files per process (RLIMIT_NOFILE); node needs about 20 to start. */
  openFiles: z.int().min(32).default(1024),
  /**
   * Bytes of each writable place of a run: the workspace, the session folder (each its own ext4
   * image on a loop device) and the bwrap private /tmp (tmpfs size). docs/security-model.md.
   */
  diskBytes: z
    .int()
    .min(8 * 1024 * 1024)
    .default(1024 * 1024 * 1024),
  /** Files and directories (inodes) of the workspace and of the session folder, each. */
  inodes: z.int().min(64).default(100_000),
});

/** Host limits, defaults applied. */
export type HostLimits = z.infer<typeof HostLimitsSchema>;
/** Host limits as a config may write them. */
export type HostLimitsInput = z.input<typeof HostLimitsSchema>;

/** Parse limits, naming the offending field in the error. */
export function parseLimits(input: HostLimitsInput = {}): HostLimits {
  const parsed = HostLimitsSchema.safeParse(input);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new Error(`invalid limits: ${first?.path.join('.') || '(root)'}: ${first?.message}`);
  }
  return parsed.data;
}

/** A container of a run's whole process tree (a run's cgroup): what a sandbox hands the supervisor. */
export interface Containment {
  /** Kill every member, wait up to `timeoutMs`; resolves with the pids still alive. */
  killAll(timeoutMs: number): Promise<number[]>;
  /** The same, synchronously and without waiting (the host is exiting). */
  killNow(): void;
  /** Remove the container once empty (waits for the kernel to finish reaping, bounded). */
  release(): void | Promise<unknown>;
  /** Where the container lives (e.g. cgroup directories), recorded so recovery can empty it after a crash. */
  paths?: string[];
  /** What the container's limits did during the run (e.g. "the memory limit killed 1 process"). */
  notes?(): string[];
  /** Which of the container's limits acted during the run (the structured twin of {@link notes}). */
  limitHits?(): ('memoryBytes' | 'pids')[];
}

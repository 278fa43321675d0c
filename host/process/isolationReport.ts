/** What a sandbox backend enforces for a run, and what it does not; shown wherever a run is shown. */
export interface IsolationReport {
  backend: 'process' | 'bwrap';
  strength: 'weak' | 'strong';
  enforced: string[];
  notEnforced: string[];
}

/** The `process` backend: supervision without a sandbox. Every gap is listed, not implied. */
export const PROCESS_BACKEND_REPORT: IsolationReport = {
  backend: 'process',
  strength: 'weak',
  enforced: [
    'own session and process group, killed (SIGTERM, then SIGKILL) at run end and confirmed through /proc',
    'environment built from an allowlist: no host secrets or tokens',
    'handshake, wall-clock, idle and cancel-grace timeouts',
    'stdout, stderr, line, update-count and event-byte quotas',
    "runner requests checked against the run's projection (run id, method, model, knowledge base, MCP server and tool) and its rate, count and size limits",
  ],
  notEnforced: [
    'filesystem isolation: the runner can read and write whatever the host user can (a read-only mount is only a symlink)',
    'network isolation: the runner can open any connection',
    'memory, CPU-time, process-count and disk limits',
    'a descendant that calls setsid leaves the group and survives the run',
  ],
};

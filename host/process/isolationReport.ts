/** What a sandbox backend enforces for a run, and what it does not; shown wherever a run is shown. */
export interface IsolationReport {
  /** The backend's name (a `Backend` of host/sandbox/backend.ts, spelled out so process/ needs nothing of sandbox/). */
  backend: 'process' | 'bwrap';
  strength: 'weak' | 'strong';
  /**
   * The run's network, in the one wording every view uses (SandboxBackend.describeNetwork, host/sandbox/backend.ts).
   */
  network: string;
  enforced: string[];
  notEnforced: string[];
}

/** What a sandbox backend enforces for a run, and what it does not; shown wherever a run is shown. */
export interface IsolationReport {
  backend: 'process' | 'bwrap';
  strength: 'weak' | 'strong';
  /** The run's network, in the one wording every view uses (sandbox/prepare.ts networkDescription). */
  network: string;
  enforced: string[];
  notEnforced: string[];
}

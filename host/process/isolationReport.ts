/** What a sandbox backend enforces for a run, and what it does not; shown wherever a run is shown. */
export interface IsolationReport {
  backend: 'process' | 'bwrap';
  strength: 'weak' | 'strong';
  enforced: string[];
  notEnforced: string[];
}

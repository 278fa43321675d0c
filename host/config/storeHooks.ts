/**
 * Observation points of the store (host/state/store.ts), called synchronously at a durability
 * boundary. They see what happened and change nothing; the crash tests use them to SIGKILL the
 * host exactly there. Declared here, with the host's configuration that carries them, so the
 * configuration does not depend on the store (docs/state.md, "Store hooks").
 */
export interface StoreHooks {
  /** After an event's transaction committed (and its listeners heard it). `n` counts from 1 per Store. */
  afterEventCommitted?(event: { type: string; seq: number; sessionId: string }, n: number): void;
  /** After an effect's intent committed, before the effect itself runs. `n` counts from 1 per Store. */
  beforeEffect?(n: number): void;
  /**
   * While the store opens: the chain has no `audit.key_created` record of this data folder's key, and the write
   * transaction that looks again and appends it has not begun (docs/scale-out.md §4). The tests hold processes here.
   */
  beforeKeyIntroduced?(): void;
}

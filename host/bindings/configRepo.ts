/**
 * The configuration repository lives with the rest of the SQL in host/state/ (docs/state.md); kept here for importers.
 */
export * from '../state/configRepo.js';

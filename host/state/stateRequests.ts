import type { JsonValue } from '../../sdk/protocol/types.js';
import type { HostRequestEntries } from '../rpc/hostRequestHandler.js';
import type { RunnerStateRepo } from './runnerState.js';

/**
 * Answers `state/get|set|delete` from the host's store in one fixed scope: the run's binding (and
 * session). The runner only names keys.
 */
export function stateRequests(repo: RunnerStateRepo, scope: string): HostRequestEntries {
  return {
    'state/get': async (params) => repo.get(scope, String(params.key)),
    'state/set': async (params) => {
      repo.set(scope, String(params.key), params.value as JsonValue);
      return {};
    },
    'state/delete': async (params) => ({ deleted: repo.delete(scope, String(params.key)) }),
  };
}

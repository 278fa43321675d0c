import type { JsonValue } from '../../sdk/protocol/types.js';
import type { HostRequestHandler } from '../rpc/hostRequestHandler.js';
import type { RunnerStateRepo } from './runnerState.js';

/**
 * Answers `state/get|set|delete` from the host's store in one fixed scope: the run's binding (and
 * session). The runner only names keys. Other host requests go to `fallback`.
 */
export function stateRequestHandler(repo: RunnerStateRepo, scope: string, fallback: HostRequestHandler): HostRequestHandler {
  return {
    handle: async (method, params, requestScope) => {
      const key = String(params.key);
      switch (method) {
        case 'state/get':
          return repo.get(scope, key);
        case 'state/set':
          repo.set(scope, key, params.value as JsonValue);
          return {};
        case 'state/delete':
          return { deleted: repo.delete(scope, key) };
        default:
          return fallback.handle(method, params, requestScope);
      }
    },
  };
}


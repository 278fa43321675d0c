import { RpcError } from '../../sdk/protocol/rpcError.js';
import type { HostRequestHandler } from '../../sdk/transport/hostEndpoint.js';

export type { HostRequestHandler, HostRequestScope } from '../../sdk/transport/hostEndpoint.js';

/** The handler of a host that implements no host requests yet: every call is `NotSupported`. */
export const unsupportedHostRequests: HostRequestHandler = {
  handle: async (method) => {
    throw RpcError.notSupported(method, 'host yet');
  },
};

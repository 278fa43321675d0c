import type { HostMethodName } from '../../sdk/protocol/methods.js';
import { RpcError } from '../../sdk/protocol/rpcError.js';
import type { HostRequestHandler, HostRequestScope } from '../../sdk/transport/hostEndpoint.js';

export type { HostRequestHandler, HostRequestScope } from '../../sdk/transport/hostEndpoint.js';

/** The handler of a host that implements no host requests yet: every call is `NotSupported`. */
export const unsupportedHostRequests: HostRequestHandler = {
  handle: async (method) => {
    throw RpcError.notSupported(method, 'host yet');
  },
};

/** Answers one host method for one run (the endpoint checked the run and the grant before). */
export type HostRequestEntry = (params: Record<string, unknown>, scope: HostRequestScope) => Promise<unknown>;

/** Host methods and their handlers; a method with no entry is not supported by this host. */
export type HostRequestEntries = Partial<Record<HostMethodName, HostRequestEntry>>;

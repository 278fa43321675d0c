import type { HostMethodName } from '../../sdk/protocol/methods.js';
import { RpcError } from '../../sdk/protocol/rpcError.js';

/** Who is asking: the run the request was checked against. */
export interface HostRequestScope {
  runId: string;
  signal: AbortSignal;
}

/**
 * Answers runner → host requests that passed the connection's checks (active run, granted
 * method). Later issues plug state, gateway, fs and approvals in here.
 */
export interface HostRequestHandler {
  handle(method: HostMethodName, params: Record<string, unknown>, scope: HostRequestScope): Promise<unknown>;
}

/** The handler of a host that implements no host requests yet: every call is `NotSupported`. */
export const unsupportedHostRequests: HostRequestHandler = {
  handle: async (method) => {
    throw RpcError.notSupported(method, 'host yet');
  },
};

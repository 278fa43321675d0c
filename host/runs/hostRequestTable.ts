import type { HostMethodName } from '../../sdk/protocol/methods.js';
import { RpcError } from '../../sdk/protocol/rpcError.js';
import type { RunAccess } from '../authz/runAccess.js';
import type { Gateway, GatewayRunHandle } from '../gateway/gateway.js';
import { gatewayRequests } from '../gateway/hostRequests.js';
import { approvalRequests } from '../policy/approvalRequests.js';
import type { RunPolicy } from '../policy/runPolicy.js';
import { fsRequests, type WriteRecorder } from '../policy/fsRequests.js';
import type { HostRequestEntries, HostRequestHandler } from '../rpc/hostRequestHandler.js';
import type { RunnerStateRepo } from '../state/runnerState.js';
import { stateRequests } from '../state/stateRequests.js';
import { Store } from '../state/store.js';

/** What one run's host requests are answered from. */
export interface HostRequestSources {
  /** The run's grants: only methods listed in `hostRequests` get an entry. */
  access: Pick<RunAccess, 'hostRequests'>;
  /** Runner state in the run's fixed scope. */
  state: { repo: RunnerStateRepo; scope: string };
  /** The run's workspace root (fs requests, under the path policy). */
  workspaceRoot: string;
  /** The host gateway and the run's handle (absent: nothing is granted through it). */
  gateway: { gateway: Gateway; handle: GatewayRunHandle | undefined };
  /** The run's policy: `approval/request`, and the gate of `fs/*` (host/policy/runPolicy.ts). */
  policy: RunPolicy;
  /** The runner's id, as approvals name who asked. */
  runnerId: string;
  /** Where `fs/write` records what it changed (its diff; host/changes/runChanges.ts). */
  writes?: WriteRecorder;
  /** Whether this host may act for the run now (Store.leaseHolds): `fs/write` asks again right before it writes. */
  leaseHolds?: () => boolean;
}

/** The refusal of a host request while this host's lease may have run out (Store.leaseHolds). */
export function leaseRefusal(method: string): RpcError {
  return RpcError.policyDenied(`${method} refused: ${Store.LEASE_MAY_HAVE_RUN_OUT}`, { deniedBy: 'host.lease' });
}

/** A run's host requests: method → handler, and nothing else. */
export type HostRequestTable = HostRequestEntries;

/**
 * The table of one run: every method the host implements (state, fs, gateway, approvals), kept to the methods the
 * run's access grants. Adding a host method is
 * adding its entry to one of the sources.
 */
export function hostRequestTable(sources: HostRequestSources): HostRequestTable {
  const implemented: HostRequestEntries = {
    ...stateRequests(sources.state.repo, sources.state.scope),
    ...fsRequests(sources.workspaceRoot, sources.policy, sources.writes, () => {
      // A handler the host was paused in goes on when it resumes: the write is refused at its last step too.
      if (sources.leaseHolds && !sources.leaseHolds()) throw leaseRefusal('fs/write');
    }),
    ...gatewayRequests(sources.gateway.gateway, sources.gateway.handle),
    ...approvalRequests(sources.policy, { runnerId: sources.runnerId, workspaceRoot: sources.workspaceRoot }),
  };
  const granted = new Set<HostMethodName>(sources.access.hostRequests);
  return Object.fromEntries(
    Object.entries(implemented).filter(([method]) => granted.has(method as HostMethodName)),
  ) as HostRequestTable;
}

/**
 * The handler the run's endpoint calls (after its run and grant checks): the table's entry, or
 * `NotSupported` for a method the host does not implement (or the run was not granted — the
 * endpoint refuses those with `PolicyDenied` before they get here). While `leaseHolds` says no (a
 * host resumed past its lease: another host may have taken the run over), every request is
 * refused before its entry runs (`PolicyDenied`, `deniedBy: host.lease`).
 */
export function tableHandler(table: HostRequestTable, leaseHolds: () => boolean = () => true): HostRequestHandler {
  return {
    handle: async (method, params, scope) => {
      if (!leaseHolds()) throw leaseRefusal(method);
      const entry = Object.hasOwn(table, method) ? table[method] : undefined;
      if (!entry) throw RpcError.notSupported(method, 'host yet');
      return entry(params, scope);
    },
  };
}

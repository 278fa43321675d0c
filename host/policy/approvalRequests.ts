import type { ApprovalRequestParams, ApprovalRequestResult } from '../../sdk/protocol/types.js';
import type { HostRequestEntries } from '../rpc/hostRequestHandler.js';
import type { GrantLifetime } from './actions.js';
import { classifyRequest } from './classify.js';
import type { ApprovalRunContext, RunPolicy } from './runPolicy.js';

/** The lifetime a runner asked for, as a grant lifetime. */
function requestedLifetime(scope: ApprovalRequestParams['scope']): GrantLifetime {
  return scope ?? 'once';
}

/** `approval/request`, served by the run's policy: the runner's claim is classified again by the host. */
export function approvalRequests(policy: RunPolicy, ctx: Pick<ApprovalRunContext, 'runnerId' | 'workspaceRoot'>) {
  const entries: HostRequestEntries = {
    'approval/request': async (params, scope): Promise<ApprovalRequestResult> => {
      const request = params as ApprovalRequestParams;
      const action = classifyRequest(
        { effect: request.action.effect, target: request.action.target },
        `runner:${ctx.runnerId}`,
        { workspaceRoot: ctx.workspaceRoot },
      );
      action.summary = request.action.summary;
      const answer = await policy.decide(action, requestedLifetime(request.scope), scope.signal);
      // A harness about to read a secret path with the host's leave (Claude Code's Read, an ACP read): the run is
      // tainted from here on, whatever it does with what it reads.
      if (answer.decision === 'approved' && action.effect === 'credential')
        policy.markTainted('credential', action.target.value);
      return {
        decision: answer.decision,
        reason: answer.reason,
        decidedBy: answer.by,
        ...(answer.grantId ? { grantId: answer.grantId } : {}),
      };
    },
  };
  return entries;
}

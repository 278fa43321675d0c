/** Dispatch one chat event for a token's tenant and answer what happened (`POST /v1/events`, follow-ups). */
import type { Dispatcher, DispatchTicket } from '../dispatch/dispatcher.js';
import { tenantOfSession } from '../state/tenancy.js';
import type { ApiDeps } from './deps.js';
import { ApiProblem } from './problems.js';
import type { z } from 'zod';
import type { DispatchAnswerSchema } from './schemas.js';

/** The dispatcher's entry with the tenant option of the tenancy lane (`dispatch(input, hooks, { tenant })`). */
type TenantDispatch = (input: unknown, hooks: object, options: { tenant: string }) => Promise<DispatchTicket>;

/** The links of a dispatched run (the SSE paths are the streams lane's routes). */
export function runLinks(runId: string, sessionId: string) {
  return {
    run: `/v1/runs/${runId}`,
    runEvents: `/v1/runs/${runId}/events`,
    sessionEvents: `/v1/sessions/${sessionId}/events`,
  };
}

/**
 * Dispatch `event` for `tenant`. Refusals are thrown as HostErrors (problems.ts maps them). A ticket whose session is
 * not the tenant's — a dispatcher that does not route by tenant yet — is cancelled and answered `no_binding`, never
 * shown: the tenant must not learn another tenant's ids or get its runs.
 */
export async function dispatchFor(
  deps: Pick<ApiDeps, 'dispatcher' | 'store'>,
  event: unknown,
  tenant: string,
): Promise<z.infer<typeof DispatchAnswerSchema>> {
  const dispatch = deps.dispatcher.dispatch.bind(deps.dispatcher) as unknown as TenantDispatch;
  const ticket = await dispatch(event, {}, { tenant });
  if (tenantOfSession(deps.store, ticket.sessionId) !== tenant) {
    if (ticket.status !== 'duplicate')
      (deps.dispatcher as Dispatcher).cancel(ticket.runId, 'dispatched outside its tenant');
    throw new ApiProblem(422, 'no_binding', `no binding of tenant "${tenant}" routes this event`, {
      reason: 'no_binding',
    });
  }
  if (ticket.status !== 'duplicate') void ticket.done; // resolves when the run ends; the client reads the run
  return {
    status: ticket.status,
    runId: ticket.runId,
    sessionId: ticket.sessionId,
    bindingId: ticket.bindingId,
    ...(ticket.status === 'duplicate' ? {} : { position: ticket.position }),
    links: runLinks(ticket.runId, ticket.sessionId),
  };
}

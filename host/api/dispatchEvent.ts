/** Dispatch one chat event for a token's tenant and answer what happened (`POST /v1/events`, follow-ups). */
import type { DispatchTicket } from '../dispatch/dispatcher.js';
import { tenantOfSession } from '../state/tenancy.js';
import type { ApiDeps } from './deps.js';
import { ApiProblem } from './problems.js';
import type { z } from 'zod';
import type { DispatchAnswerSchema } from './schemas.js';

/** The links of a dispatched run (the SSE paths are the streams lane's routes). */
export function runLinks(runId: string, sessionId: string) {
  return {
    run: `/v1/runs/${runId}`,
    runEvents: `/v1/runs/${runId}/events`,
    sessionEvents: `/v1/sessions/${sessionId}/events`,
  };
}

/**
 * Dispatch `event` for `tenant` (the dispatcher routes among that tenant's bindings only and dedupes per tenant).
 * Refusals are thrown as HostErrors (problems.ts maps them). Defence in depth: a ticket whose session is not the
 * tenant's would be a dispatcher bug; it is cancelled and answered `no_binding`, never shown.
 */
export async function dispatchFor(
  deps: Pick<ApiDeps, 'dispatcher' | 'store'>,
  event: unknown,
  tenant: string,
): Promise<z.infer<typeof DispatchAnswerSchema>> {
  const ticket: DispatchTicket = await deps.dispatcher.dispatch(event, {}, { tenant });
  if (tenantOfSession(deps.store, ticket.sessionId) !== tenant) {
    // Only a run this event started: an appended message's run is an earlier event's.
    if (ticket.status === 'started' || ticket.status === 'queued')
      deps.dispatcher.cancel(ticket.runId, 'dispatched outside its tenant');
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
    ...(ticket.status !== 'duplicate' && ticket.notAppended ? { notAppended: ticket.notAppended } : {}),
    links: runLinks(ticket.runId, ticket.sessionId),
  };
}

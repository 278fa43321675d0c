/**
 * `GET /v1/doctor` (docs/http-api.md, "Admin endpoints"): `paddock doctor --json` as this server's process sees it
 * (its start-up machine probe, its environment), with the missing secret references of the token's tenant only.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { harnessReportsAsync, type HarnessReport } from '../../harness/harnesses.js';
import { doctorReport, missingSecretLines, SECRET_HOLDING_KINDS } from '../../ops/doctor.js';
import { storedSpecs } from '../../state/configRepo.js';
import { principalOf, requireRole } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { API_SCHEMAS, AUTH_ERRORS } from '../schemas.js';

const DoctorSchema = z.looseObject({
  machine: z.looseObject({}),
  backends: z.record(z.string(), z.looseObject({})),
  harnesses: z.array(z.looseObject({})),
  identity: z.looseObject({ ok: z.boolean(), summary: z.string(), warnings: z.array(z.string()) }),
  missingSecrets: z.array(z.string()),
});
API_SCHEMAS.add(DoctorSchema, {
  id: 'Doctor',
  description:
    "paddock doctor --json: this machine's sandbox backends and limits (and why not), harness CLIs, run identity, " +
    "and the token's tenant's secret references that do not resolve in the server's environment.",
});

/** How long a server reuses its harness reports (a CLI installed or upgraded meanwhile shows after this). */
export const HARNESS_REPORT_TTL_MS = 60_000;

/**
 * The harness reports of this server, made asynchronously (asking each CLI for its version takes ~200 ms; asked
 * synchronously per request, any admin could stall the whole server) and kept for {@link HARNESS_REPORT_TTL_MS}.
 */
function cachedHarnessReports(): () => Promise<HarnessReport[]> {
  let cached: { at: number; reports: Promise<HarnessReport[]> } | undefined;
  return () => {
    if (!cached || Date.now() - cached.at > HARNESS_REPORT_TTL_MS)
      cached = { at: Date.now(), reports: harnessReportsAsync() };
    return cached.reports;
  };
}

/** Register `GET /v1/doctor` (admin of any tenant: machine facts hold no tenant's data; secrets are scoped). */
export function adminDoctorRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const harnesses = cachedHarnessReports();
  app.get('/v1/doctor', {
    schema: {
      summary: 'What this machine enforces and why not, harnesses, and missing secret references (paddock doctor)',
      tags: ['admin'],
      security: [{ bearer: [] }],
      response: { 200: DoctorSchema, ...AUTH_ERRORS },
    },
    preValidation: requireRole('admin', 'viewer'),
    handler: async (request) => {
      const { tenant } = principalOf(request);
      const missing = missingSecretLines(storedSpecs(deps.store, SECRET_HOLDING_KINDS), tenant);
      return doctorReport(deps.config, missing, undefined, await harnesses());
    },
  });
}

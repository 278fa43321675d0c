/**
 * `GET /v1/doctor` (docs/http-api.md, "Admin endpoints"): `paddock doctor --json` as this server's process sees it
 * (its start-up machine probe, its environment), with the missing secret references of the token's tenant only.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
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

/** Register `GET /v1/doctor` (admin of any tenant: machine facts hold no tenant's data; secrets are scoped). */
export function adminDoctorRoutes(app: FastifyInstance, deps: ApiDeps): void {
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
      return doctorReport(deps.config, missing);
    },
  });
}

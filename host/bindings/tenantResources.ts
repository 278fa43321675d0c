import { tenantOf } from '../config/tenant.js';
import type { Resources } from './schema.js';

/**
 * The resources of one tenant: all a binding of that tenant can be granted. Planning and `explain` compute access
 * from these only, so a cross-tenant grant (refused by apply) could never reach a run even in a store that had one.
 */
export function resourcesOfTenant(resources: Resources, tenant: string): Resources {
  const own = <T extends { tenant?: string }>(list: T[]) => list.filter((r) => tenantOf(r) === tenant);
  return {
    models: own(resources.models),
    knowledgeBases: own(resources.knowledgeBases),
    mcpServers: own(resources.mcpServers),
    skills: own(resources.skills),
    artifacts: own(resources.artifacts),
    mounts: own(resources.mounts),
  };
}

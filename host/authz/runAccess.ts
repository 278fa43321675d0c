import type { HostMethodName } from '../../sdk/protocol/methods.js';
import type { RequestLimits } from '../../sdk/transport/requestBudget.js';
import type { Binding, Resources } from '../bindings/schema.js';
import type { HostLimits } from '../config/limits.js';
import { RESOURCE_KINDS, type ResourceKind, type RunnerManifestFile } from '../plugins/manifest.js';

/** Per-run limits a manifest or binding may lower. */
const LIMIT_KEYS = [
  'wallClockMs',
  'idleMs',
  'maxUpdates',
  'maxEventBytes',
  'maxStdoutBytes',
  'maxStderrBytes',
  'memoryBytes',
  'pids',
  'cpuSeconds',
  'fileSizeBytes',
  'openFiles',
  'diskBytes',
  'inodes',
] as const;

/** Current resources by kind and id (what exists now). */
export type ResourceIndex = { [K in keyof Resources]: Map<string, Resources[K][number]> };

/** Index resource lists by id. */
export function indexResources(resources: Resources): ResourceIndex {
  return Object.fromEntries(
    RESOURCE_KINDS.map((kind) => [kind, new Map(resources[kind].map((r) => [r.id, r]))]),
  ) as ResourceIndex;
}

/** A granted MCP server, as the run sees it. */
export type McpHandle = {
  id: string;
  name?: string;
  /** Absent: every tool the server lists except `deniedTools`. */
  allowedTools?: string[];
  deniedTools: string[];
};

/** Everything one run of a binding may touch: manifest requests ∩ binding grants ∩ what exists now. */
export interface RunAccess {
  hostRequests: HostMethodName[];
  models: { id: string; name?: string; provider: string; model: string }[];
  knowledgeBases: { id: string; name?: string }[];
  mcpServers: McpHandle[];
  skills: { id: string; name: string }[];
  artifacts: { id: string; name: string }[];
  mounts: { id: string; readOnly: boolean }[];
  state: 'none' | 'session' | 'binding';
  fs: 'none' | 'read' | 'readwrite';
  approval: boolean;
  /** The window of earlier turns of the conversation each run receives (`none`: nothing). */
  history: Binding['grants']['history'];
  /** Limits of each run (host limits, lowered by the binding, else the manifest). */
  limits: HostLimits;
  requestLimits: RequestLimits;
  /** What a grant or manifest mentions but the run does not get, and why (for `explain`). */
  withheld: { what: string; why: string }[];
}

/** What a host request needs granted, besides the manifest asking for it. */
function requestGranted(
  method: HostMethodName,
  p: Omit<RunAccess, 'hostRequests' | 'withheld' | 'limits' | 'requestLimits'>,
): string | undefined {
  switch (method) {
    case 'state/get':
    case 'state/set':
    case 'state/delete':
      return p.state === 'none' ? 'grants.state is none' : undefined;
    case 'model/complete':
      return p.models.length === 0 ? 'no model is granted' : undefined;
    case 'kb/retrieve':
      return p.knowledgeBases.length === 0 ? 'no knowledge base is granted' : undefined;
    case 'tool/list':
    case 'tool/call':
      return p.mcpServers.length === 0 ? 'no MCP server is granted' : undefined;
    case 'fs/read':
      return p.fs === 'none' ? 'grants.fs is none' : undefined;
    case 'fs/write':
      return p.fs !== 'readwrite' ? `grants.fs is ${p.fs}` : undefined;
    case 'approval/request':
      return p.approval ? undefined : 'grants.approval is false';
  }
}

/** The intersection of two optional allow lists (undefined = everything). */
function intersect(a: string[] | undefined, b: string[] | undefined): string[] | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return a.filter((x) => b.includes(x));
}

/**
 * Compute a run's access. Pure: the same inputs always give the same access, and
 * nothing in it lies outside the binding's grants, the manifest's requests or `resources`.
 */
export function resolveRunAccess(
  manifest: RunnerManifestFile,
  binding: Binding,
  resources: ResourceIndex,
  hostLimits: HostLimits,
): RunAccess {
  const withheld: RunAccess['withheld'] = [];
  const uses = (kind: ResourceKind, ids: string[]): string[] => {
    if (ids.length > 0 && !manifest.resources.includes(kind)) {
      withheld.push({ what: `${kind}: ${ids.join(', ')}`, why: `the runner's manifest does not use ${kind}` });
      return [];
    }
    return ids.filter((id) => {
      if (resources[kind].has(id)) return true;
      withheld.push({ what: `${kind}: ${id}`, why: 'the resource does not exist (any more)' });
      return false;
    });
  };
  const g = binding.grants;
  const models = uses('models', g.models).map((id) => {
    const m = resources.models.get(id)!;
    return { id, ...(m.name ? { name: m.name } : {}), provider: m.provider, model: m.model };
  });
  const knowledgeBases = uses('knowledgeBases', g.knowledgeBases).map((id) => {
    const kb = resources.knowledgeBases.get(id)!;
    return { id, ...(kb.name ? { name: kb.name } : {}) };
  });
  const mcpGrants = new Map(
    g.mcpServers.map((grant) => (typeof grant === 'string' ? [grant, undefined] : [grant.id, grant.tools])),
  );
  const mcpServers = uses('mcpServers', [...mcpGrants.keys()]).map((id): McpHandle => {
    const server = resources.mcpServers.get(id)!;
    const deniedTools = [...server.tools.deny];
    const allowedTools = intersect(server.tools.allow, mcpGrants.get(id))?.filter((t) => !deniedTools.includes(t));
    return {
      id,
      ...(server.name ? { name: server.name } : {}),
      ...(allowedTools ? { allowedTools } : {}),
      deniedTools,
    };
  });
  const skills = uses('skills', g.skills).map((id) => ({ id, name: resources.skills.get(id)!.name }));
  const artifacts = uses('artifacts', g.artifacts).map((id) => ({ id, name: resources.artifacts.get(id)!.name }));
  const mounts = uses('mounts', g.mounts).map((id) => ({ id, readOnly: resources.mounts.get(id)!.mode === 'ro' }));
  if (binding.workspace === 'copy') {
    for (const m of mounts.filter((x) => !x.readOnly))
      withheld.push({
        what: `writes to mount ${m.id}`,
        why:
          'workspace is copy: the run gets a copy of the folder and its writes never reach the mount ' +
          '(workspace: mount binds it)',
      });
  }

  const granted = {
    models,
    knowledgeBases,
    mcpServers,
    skills,
    artifacts,
    mounts,
    state: g.state,
    fs: g.fs,
    approval: g.approval,
    history: g.history,
  };
  const hostRequests = manifest.capabilities.hostRequests.filter((m) => {
    const why = requestGranted(m as HostMethodName, granted);
    // Approval requests are opt-in: a runner that can ask (claude-code, acp, codex) works without them, its
    // harness's prompts denied. Not granting them is a choice, not a grant lost on the way (explain shows it).
    if (why && m !== 'approval/request') withheld.push({ what: `host request ${m}`, why });
    return !why;
  }) as HostMethodName[];
  for (const [grant, methods] of [
    [g.state !== 'none', ['state/get', 'state/set', 'state/delete']],
    [g.fs !== 'none', ['fs/read']],
    [g.approval, ['approval/request']],
  ] as const) {
    if (grant && !methods.some((m) => manifest.capabilities.hostRequests.includes(m))) {
      withheld.push({ what: methods.join(', '), why: "granted, but the runner's manifest does not ask for it" });
    }
  }

  const limits = { ...hostLimits };
  for (const key of LIMIT_KEYS) {
    const wanted = binding.limits[key] ?? manifest.limits[key];
    if (wanted !== undefined) limits[key] = Math.min(wanted, hostLimits[key]);
  }
  const requestLimits = {
    requestsPerSecond: binding.limits.requestsPerSecond,
    maxRequests: binding.limits.maxRequests,
    maxRequestBytes: binding.limits.maxRequestBytes,
  };
  return { hostRequests, ...granted, limits, requestLimits, withheld };
}

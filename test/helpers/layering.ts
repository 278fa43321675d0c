// The host's layering rule as a checker over an import graph (test/unit/importGraph.test.ts runs it
// on the real graph and on planted ones). The order is decided in docs/decisions.md (Issue 12 — habits).

/** One import: repo-relative importing file → repo-relative imported file. */
export interface ImportEdge {
  from: string;
  to: string;
}

/** A rule broken by one import. */
export interface LayerViolation {
  kind: 'back-edge' | 'cycle' | 'unplaced';
  from: string;
  to: string;
  /** `<from> → <to>` as files, the key an allowlist entry names. */
  key: string;
  detail: string;
}

/**
 * The host's layers, top (faces) to bottom (the SDK's protocol). A unit is a folder of host/
 * (`runs`), a top-level host file (`start.ts`), or one file named on its own (`di/configure.ts`,
 * the composition root, which wires every service and so sits with the faces).
 * A unit may import its own layer and every layer below; the units of one layer must not form a cycle.
 */
export const HOST_LAYERS: readonly (readonly string[])[] = [
  ['cli', 'api', 'start.ts', 'index.ts', 'di/configure.ts', 'hostStore.ts'],
  // What both admin front ends (the CLI's admin commands, `paddock serve`'s admin endpoints) do, once.
  ['admin'],
  ['dispatch'],
  ['runs', 'ops'],
  [
    'authz',
    'policy',
    'changes',
    'sandbox',
    'gateway',
    'bindings',
    'plugins',
    'packages',
    'secrets',
    'harness',
    'recovery',
  ],
  ['state', 'audit'],
  // What a configuration and a runner manifest are (zod schemas, each its own unit): the store keeps
  // them typed (state/configRepo.ts), authz reads them, bindings/ validates and applies them. The approvals
  // vocabulary (types only) likewise: the store keeps approvals and capability grants in its terms.
  ['bindings/schema.ts', 'plugins/manifest.ts', 'policy/actions.ts'],
  ['process'],
  ['config', 'util', 'errors.ts', 'logging', 'di', 'rpc'],
  ['sdk'],
];

/** The unit a repo-relative file belongs to, or undefined for files the rule does not cover. */
export function unitOf(file: string): string | undefined {
  const parts = file.split('/');
  if (parts[0] === 'sdk') return 'sdk';
  if (parts[0] !== 'host' || parts.length < 2) return undefined;
  if (parts.length === 2) return parts[1]!.replace(/\.js$/, '.ts');
  const single = `${parts[1]}/${parts.slice(2).join('/')}`.replace(/\.js$/, '.ts');
  if (HOST_LAYERS.some((layer) => layer.includes(single))) return single;
  return parts[1];
}

/** Every back edge, intra-layer cycle and unplaced unit in `edges` under `layers`. */
export function layerViolations(
  edges: readonly ImportEdge[],
  layers: readonly (readonly string[])[] = HOST_LAYERS,
  unit: (file: string) => string | undefined = unitOf,
): LayerViolation[] {
  const layerOf = new Map<string, number>();
  layers.forEach((units, i) => units.forEach((u) => layerOf.set(u, i)));
  const violations: LayerViolation[] = [];
  const sameLayer: { a: string; b: string; edge: ImportEdge }[] = [];
  for (const edge of edges) {
    const a = unit(edge.from);
    const b = unit(edge.to);
    if (a === undefined || b === undefined || a === b) continue;
    const key = `${edge.from} → ${edge.to}`;
    const la = layerOf.get(a);
    const lb = layerOf.get(b);
    if (la === undefined || lb === undefined) {
      const missing = la === undefined ? a : b;
      violations.push({ kind: 'unplaced', ...edge, key, detail: `${missing} is in no layer: place it in HOST_LAYERS` });
    } else if (lb < la) {
      violations.push({
        kind: 'back-edge',
        ...edge,
        key,
        detail: `${a} (layer ${la}) imports ${b} (layer ${lb}, higher)`,
      });
    } else if (la === lb) {
      sameLayer.push({ a, b, edge });
    }
  }
  // Cycles among the units of one layer: an edge is in a cycle when its target reaches its source.
  const next = new Map<string, Set<string>>();
  for (const { a, b } of sameLayer) (next.get(a) ?? next.set(a, new Set()).get(a)!).add(b);
  const reaches = (start: string, goal: string): boolean => {
    const seen = new Set<string>();
    const stack = [start];
    while (stack.length) {
      const u = stack.pop()!;
      if (u === goal) return true;
      if (seen.has(u)) continue;
      seen.add(u);
      stack.push(...(next.get(u) ?? []));
    }
    return false;
  };
  for (const { a, b, edge } of sameLayer) {
    if (reaches(b, a)) {
      const key = `${edge.from} → ${edge.to}`;
      violations.push({ kind: 'cycle', ...edge, key, detail: `${a} → ${b} closes a cycle (${b} reaches ${a})` });
    }
  }
  return violations;
}

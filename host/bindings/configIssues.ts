import type { z } from 'zod';
import { clip } from '../util/clip.js';
import { didYouMean, type SuggestBudget } from '../util/didYouMean.js';

/** A zod issue as a field path and message, the shape config problems are reported in. */
export interface IssueProblem {
  path: PropertyKey[];
  message: string;
}

type Def = { type: string; [key: string]: unknown };
const defOf = (schema: unknown): Def => (schema as { _zod: { def: Def } })._zod.def;

/** Property names of every object schema `path` may lead to inside `schema` (unions: all branches). */
export function knownKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): Set<string> {
  const keys = new Set<string>();
  const visit = (node: unknown, rest: readonly PropertyKey[], depth: number): void => {
    if (!node || depth > 64) return;
    const def = defOf(node);
    switch (def.type) {
      case 'object': {
        const shape = def.shape as Record<string, unknown>;
        if (rest.length === 0) Object.keys(shape).forEach((k) => keys.add(k));
        else if (typeof rest[0] === 'string' && Object.hasOwn(shape, rest[0]))
          visit(shape[rest[0]], rest.slice(1), depth + 1);
        return;
      }
      case 'array':
        if (typeof rest[0] === 'number') visit(def.element, rest.slice(1), depth + 1);
        return;
      case 'record':
        if (rest.length > 0) visit(def.valueType, rest.slice(1), depth + 1);
        return;
      case 'union':
        for (const option of def.options as unknown[]) visit(option, rest, depth + 1);
        return;
      case 'pipe':
        return visit(def.in, rest, depth + 1);
      case 'lazy':
        return visit((def.getter as () => unknown)(), rest, depth + 1);
      default:
        // optional, default, prefault, nullable, readonly, catch, nonoptional: one inner schema.
        if (def.innerType) visit(def.innerType, rest, depth + 1);
    }
  };
  visit(schema, path, 0);
  return keys;
}

/** How badly a union branch failed: fewer issues is closer; a wrong type at the union itself is farthest. */
function branchScore(issues: readonly z.core.$ZodIssue[]): number {
  return issues.length + (issues.some((i) => i.path.length === 0 && i.code === 'invalid_type') ? 1000 : 0);
}

/**
 * Every problem a zod issue stands for, paths from the root of `schema`: one per unknown key
 * (with the nearest known key as a did-you-mean), and for a union, the problems of the branch
 * the value came closest to matching.
 */
export function describeIssue(
  schema: z.ZodType,
  issue: z.core.$ZodIssue,
  base: PropertyKey[] = [],
  budget?: SuggestBudget,
): IssueProblem[] {
  const path = [...base, ...issue.path];
  if (issue.code === 'unrecognized_keys') {
    const known = knownKeysAt(schema, path);
    return issue.keys.map((key) => {
      const guess = didYouMean(key, known, budget);
      return { path, message: `Unrecognized key: "${clip(key)}"${guess ? `; did you mean "${guess}"?` : ''}` };
    });
  }
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    const closest = [...issue.errors].sort((a, b) => branchScore(a) - branchScore(b))[0]!;
    if (closest.length > 0) return closest.flatMap((sub) => describeIssue(schema, sub, path, budget));
  }
  return [{ path, message: issue.message }];
}

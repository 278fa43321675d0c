import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BindingSchema } from '../../../host/bindings/schema.js';
import { repoPath } from '../../helpers/fixtures.js';

/** Field paths of a binding: top-level fields, and one level into route, grants, limits and network. */
function fieldPaths(): string[] {
  const shape = BindingSchema.shape as Record<string, z.ZodType>;
  const paths: string[] = [];
  for (const [key, schema] of Object.entries(shape)) {
    let inner: z.ZodType = schema;
    // Unwrap defaults and optionals to reach an object's own fields.
    while (inner instanceof z.ZodDefault || inner instanceof z.ZodOptional)
      inner = (inner as z.ZodDefault<z.ZodType>).unwrap() as z.ZodType;
    if (['route', 'grants', 'limits', 'network'].includes(key) && inner instanceof z.ZodObject) {
      for (const sub of Object.keys(inner.shape)) paths.push(`${key}.${sub}`);
    } else paths.push(key);
  }
  return paths;
}

describe('docs/security-model.md covers every policy field', () => {
  it('each binding field has a row: mechanism, test, behaviour when unavailable', () => {
    const doc = readFileSync(repoPath('docs/security-model.md'), 'utf8');
    const paths = fieldPaths();
    expect(paths.length).toBeGreaterThan(30);
    // A row starts with the field in backticks; a formatter may pad the cell.
    const missing = paths.filter((p) => !new RegExp(`^\\|\\s*\`${p.replace(/\./g, '\\.')}\`\\s*\\|`, 'm').test(doc));
    expect(missing).toEqual([]);
  });
});

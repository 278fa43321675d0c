import { z } from 'zod';
import type { RunnerDefinition } from './defineRunner.js';

/**
 * The JSON Schema (draft 2020-12) of a runner's config, as `runner.json`'s `configSchema` holds
 * it: the input side of the zod schema (fields with a default are optional and carry it, so the
 * host fills them in), descriptions from `.describe()`. Without a schema: any object.
 */
export function configJsonSchema(definition: Pick<RunnerDefinition, 'configSchema'>): Record<string, unknown> {
  if (!definition.configSchema) return { type: 'object' };
  const { $schema: _dialect, ...schema } = z.toJSONSchema(definition.configSchema, {
    target: 'draft-2020-12',
    io: 'input',
  }) as Record<string, unknown>;
  return schema;
}

import { z } from 'zod';

const PeerInfoSchema = z.looseObject({ name: z.string().min(1), version: z.string().min(1) });

/** `initialize` params (host → runner), the first message on every connection. */
export const InitializeParamsSchema = z
  .looseObject({
    protocolVersion: z.int().positive(),
    host: PeerInfoSchema,
    capabilities: z.looseObject({
      /** Runner → host request methods this host implements. */
      hostRequests: z.array(z.string()).default([]),
    }),
  })
  .meta({ id: 'InitializeParams' });

/** `initialize` result (runner → host). */
export const InitializeResultSchema = z
  .looseObject({
    protocolVersion: z.int().positive(),
    runner: PeerInfoSchema,
    capabilities: z.looseObject({
      /** The runner stops a run on `run/cancel` and answers it with status `cancelled`. */
      cancel: z.boolean(),
      /** The runner can continue an external session from `resume.external`. */
      resume: z.boolean().default(false),
      /**
       * The runner takes `run/message` during a run (steering `append`): a user message delivered to the running
       * harness instead of waiting for a new run.
       */
      append: z.boolean().default(false),
    }),
  })
  .meta({ id: 'InitializeResult' });

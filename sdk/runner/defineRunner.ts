import type { z } from 'zod';
import type { WireBinding, ChatEvent, RunResultInput } from '../protocol/types.js';
import type { RunContext } from './context.js';

/** Who the runner is; sent to the host in the `initialize` answer. */
export interface RunnerManifest {
  name: string;
  version: string;
  description?: string;
  /** Set when the runner can continue an external session from `ctx.resume.external`. */
  resume?: boolean;
  /**
   * Set when the runner takes user messages during a run (`ctx.onMessage`, the binding's steering `append`): sent as
   * `capabilities.append`, so the host delivers them instead of queueing a run.
   */
  append?: boolean;
}

/**
 * The declared fields of `T` but `config`, without its index signature: `Omit` on a loose object
 * would type every field `unknown`. Homomorphic, so optional fields stay optional.
 */
type DeclaredWithoutConfig<T> = {
  [K in keyof T as string extends K ? never : number extends K ? never : K extends 'config' ? never : K]: T[K];
};

/** The binding as `run()` sees it: `config` already parsed with the runner's `configSchema`. */
export type RunBinding<Config> = DeclaredWithoutConfig<WireBinding> & { config: Config };

/**
 * What `run()` may return: a full {@link RunResultInput}, a plain string (a completed run whose
 * output is that text), or nothing (a completed run with no output).
 */
export type RunReturn = RunResultInput | string | void;

/** A runner: its manifest, an optional config schema and the function that executes one run. */
export interface RunnerDefinition<S extends z.ZodType = z.ZodType<Record<string, unknown>>> {
  manifest: RunnerManifest;
  /** Parses `binding.config`; a config that fails it fails the run with `invalid_config`. */
  configSchema?: S;
  /**
   * Execute one run. Stream progress with `ctx.emit`. Stop promptly when `ctx.signal` aborts:
   * whatever `run` then returns or throws, the run ends with status `cancelled`.
   * A throw (without cancellation) ends the run with status `failed` and the error's message.
   */
  run(event: ChatEvent, binding: RunBinding<z.output<S>>, ctx: RunContext): Promise<RunReturn> | RunReturn;
}

/** Declare a runner. Returns the definition unchanged, typed; pass it to `serve()`. */
export function defineRunner<S extends z.ZodType = z.ZodType<Record<string, unknown>>>(
  definition: RunnerDefinition<S>,
): RunnerDefinition<S> {
  if (!definition.manifest?.name || !definition.manifest.version) {
    throw new TypeError('defineRunner: manifest.name and manifest.version are required');
  }
  if (typeof definition.run !== 'function') throw new TypeError('defineRunner: run must be a function');
  return definition;
}

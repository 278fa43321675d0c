import type { WireBinding, RunResult } from '../protocol/types.js';

/** What a harness needs to call models through the host gateway. */
export interface GatewayAccess {
  gateway: NonNullable<WireBinding['gateway']>;
  /** The run token (from `PADDOCK_RUN_TOKEN`): the harness's API key, good only for this run. */
  token: string;
  /** The granted model to use: the config's choice, else the first granted model. */
  model: string;
}

/**
 * The gateway, run token and model a harness runner should use, or the failed RunResult that
 * explains what is missing (no granted model, a config model that is not granted).
 */
export function gatewayAccess(
  binding: WireBinding,
  wanted: string | undefined,
  who: string,
  env: NodeJS.ProcessEnv = process.env,
): GatewayAccess | RunResult {
  const token = env[binding.gateway?.tokenEnv ?? 'PADDOCK_RUN_TOKEN'];
  const model = wanted ?? binding.models[0]?.id;
  if (!binding.gateway || !token || !model)
    return {
      status: 'failed',
      error: { code: 'no_model', message: `${who} needs a granted model (grants.models) to reach the host gateway` },
    };
  if (!binding.models.some((m) => m.id === model))
    return {
      status: 'failed',
      error: { code: 'model_not_granted', message: `config.model "${model}" is not granted to this binding` },
    };
  return { gateway: binding.gateway, token, model };
}

/** Type guard: did {@link gatewayAccess} find everything? */
export function hasAccess(x: GatewayAccess | RunResult): x is GatewayAccess {
  return 'token' in x;
}

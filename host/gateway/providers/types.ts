import type { ModelResource } from '../../bindings/schema.js';
import type { WireFormat } from '../wire/types.js';

/** One attempt of a model call, as the gateway hands it to a provider. */
export interface ProviderCall {
  format: WireFormat;
  model: ModelResource;
  /** The request body, `model` already replaced by the provider's name. */
  body: Record<string, unknown>;
  /** The query string of the harness's request (`?beta=true`), passed on. */
  query: string;
  /** Headers of the harness's request that a provider may pass on (`anthropic-version`, `anthropic-beta`). */
  clientHeaders: Record<string, string>;
  signal: AbortSignal;
  /** 1 for the first attempt. */
  attempt: number;
}

/** A provider's answer: status, headers, and the body as text chunks. */
export interface ProviderAnswer {
  status: number;
  headers: Record<string, string>;
  body: AsyncIterable<string>;
}

/** A model provider behind the gateway. */
export interface Provider {
  /** Wire formats this provider accepts for this model. */
  formats: readonly WireFormat[];
  /** The endpoint a circuit breaker guards (provider + base URL). */
  endpointKey: string;
  /** True for the built-in scripted model (labelled everywhere a user sees it). */
  scripted: boolean;
  send(call: ProviderCall): Promise<ProviderAnswer>;
}

/** A failure before the provider answered (no key, no connection, timeout to first byte). */
export class ProviderUnavailable extends Error {
  constructor(
    message: string,
    /** Worth retrying (a connection error or timeout), or not (a missing key). */
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'ProviderUnavailable';
  }
}

/** Wire formats a model accepts, from its provider and `api`. */
export function formatsOf(model: ModelResource): readonly WireFormat[] {
  if (model.provider === 'scripted') return ['anthropic', 'responses', 'chat'];
  if (model.provider === 'anthropic') return ['anthropic'];
  return [model.api ?? 'responses'];
}

import type { ModelResource } from '../../bindings/schema.js';
import type { Redactor } from '../../secrets/redactor.js';
import { httpProvider } from './httpProvider.js';
import { scriptedProvider } from './scriptedProvider.js';
import type { Provider } from './types.js';

export * from './types.js';

/** The provider of a model resource. */
export function createProvider(model: ModelResource, redactor: Redactor): Provider {
  return model.provider === 'scripted' ? scriptedProvider(model) : httpProvider(model, redactor);
}

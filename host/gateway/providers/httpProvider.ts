import type { ModelResource } from '../../bindings/schema.js';
import { readSecretRef } from '../../secrets/hostSecrets.js';
import type { Redactor } from '../../secrets/redactor.js';
import { formatsOf, ProviderUnavailable, type Provider, type ProviderAnswer, type ProviderCall } from './types.js';

const DEFAULT_BASE = { anthropic: 'https://api.anthropic.com', openai: 'https://api.openai.com/v1' } as const;
/** Client headers passed upstream (everything else, the token included, stays here). */
const PASSED_HEADERS = ['anthropic-version', 'anthropic-beta', 'openai-beta'];

/** Decode a fetch body into text chunks. */
async function* textChunks(body: ReadableStream<Uint8Array> | null): AsyncIterable<string> {
  if (!body) return;
  const decoder = new TextDecoder();
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) yield decoder.decode(chunk, { stream: true });
  const tail = decoder.decode();
  if (tail) yield tail;
}

/**
 * An Anthropic or OpenAI-compatible provider reached over HTTP(S). The key is read from its
 * reference for every attempt (a rotated key applies at once) and registered with the redactor
 * before it is used.
 */
export function httpProvider(model: ModelResource, redactor: Redactor, env: NodeJS.ProcessEnv = process.env): Provider {
  const anthropic = model.provider === 'anthropic';
  const base = (model.baseUrl ?? DEFAULT_BASE[anthropic ? 'anthropic' : 'openai']).replace(/\/+$/, '');
  return {
    formats: formatsOf(model),
    endpointKey: `${model.provider} ${base}`,
    scripted: false,
    async send(call: ProviderCall): Promise<ProviderAnswer> {
      const key = model.apiKey ? readSecretRef(model.apiKey, env) : undefined;
      if (!key)
        throw new ProviderUnavailable(
          `the key reference of model "${model.id}" (${JSON.stringify(model.apiKey)}) is not readable on the host`,
          false,
        );
      redactor.add(key);
      const url = anthropic
        ? `${base}/v1/messages${call.query}`
        : `${base}/${call.format === 'chat' ? 'chat/completions' : 'responses'}`;
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: call.body.stream ? 'text/event-stream' : 'application/json',
      };
      for (const name of PASSED_HEADERS) if (call.clientHeaders[name]) headers[name] = call.clientHeaders[name];
      if (anthropic) {
        headers['x-api-key'] = key;
        headers['anthropic-version'] ??= '2023-06-01';
      } else headers.authorization = `Bearer ${key}`;
      // The timeout covers the wait for the answer's headers; a long stream is not cut.
      const timeout = new AbortController();
      const timer = setTimeout(
        () => timeout.abort(new Error(`no answer within ${model.timeoutMs} ms`)),
        model.timeoutMs,
      );
      let response: Response;
      try {
        response = await fetch(url, {
          method: 'POST',
          headers,
          body: JSON.stringify(call.body),
          signal: AbortSignal.any([call.signal, timeout.signal]),
        });
      } catch (error) {
        if (call.signal.aborted) throw error;
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        throw new ProviderUnavailable(
          `cannot reach ${new URL(url).host}: ` +
            (timeout.signal.aborted
              ? String((timeout.signal.reason as Error | undefined)?.message)
              : `${cause?.code ?? cause?.message ?? (error as Error).message}`),
          true,
        );
      } finally {
        clearTimeout(timer);
      }
      const out: Record<string, string> = {};
      response.headers.forEach((value, name) => (out[name] = value));
      return { status: response.status, headers: out, body: textChunks(response.body) };
    },
  };
}

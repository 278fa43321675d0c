import type { Redactor } from '../secrets/redactor.js';

/** The parts of a harness's model request that the gateway passes on to the provider. */
export interface OutboundParts {
  body: Record<string, unknown>;
  /** The query string as the harness sent it (`?beta=true`, or empty). */
  query: string;
  /** The few client headers passed on (`anthropic-beta`, `anthropic-version`, `openai-beta`). */
  clientHeaders: Record<string, string>;
}

/**
 * Every part of a model request that leaves for the provider, redacted: the body (each string and key), the query
 * string (each key and value percent-decoded first, so `%73%6b…` is read as what it spells, then encoded again) and
 * the passed-on headers. `onRedacted` hears (once) that something was replaced: the harness had read it.
 */
export function redactOutbound(redactor: Redactor, parts: OutboundParts, onRedacted: () => void): OutboundParts {
  let redacted = false;
  const heard = () => {
    redacted = true;
  };
  const body = redactor.value(parts.body, heard);
  const clientHeaders = redactor.value(parts.clientHeaders, heard);
  let query = parts.query;
  if (query !== '' && query !== '?') {
    const params = new URLSearchParams(query.startsWith('?') ? query.slice(1) : query);
    const clean = new URLSearchParams();
    for (const [key, value] of params) {
      const [k, v] = [redactor.text(key), redactor.text(value)];
      if (k !== key || v !== value) redacted = true;
      clean.append(k, v);
    }
    // The raw text too (a form URLSearchParams reads differently from the provider, a lone `%`), and the text rebuilt
    // (a secret spanning a key, its `=` and its value).
    const rebuilt = clean.toString();
    const safe = redactor.text(rebuilt);
    if (redactor.text(query) !== query || safe !== rebuilt) redacted = true;
    if (redacted) query = `?${safe}`;
  }
  if (redacted) onRedacted();
  return { body, query, clientHeaders };
}

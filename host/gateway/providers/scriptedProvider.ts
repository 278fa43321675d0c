import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ModelResource } from '../../bindings/schema.js';
import { maxOutputOf } from '../modelBudget.js';
import { planReply, priorMessages } from '../scripted/script.js';
import { blocksText } from '../wire/types.js';
import { WIRES } from '../wire/index.js';
import type { NormalizedReply } from '../wire/types.js';
import type { Provider, ProviderAnswer, ProviderCall } from './types.js';

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

/** Rough, deterministic token count of some text (4 characters a token). */
const tokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));

/**
 * The built-in scripted model: deterministic replies in every wire format, decided from the
 * request's last user message or tool result (docs/gateway.md). It holds no key and makes no
 * connection. Attempts are counted per request fingerprint so `FAIL:429x1` fails once and then
 * succeeds on the gateway's retry.
 */
export function scriptedProvider(model: ModelResource): Provider {
  let requests = 0;
  const attempts = new Map<string, number>();
  return {
    formats: ['anthropic', 'responses', 'chat'],
    endpointKey: `scripted ${model.id}`,
    scripted: true,
    async send(call: ProviderCall): Promise<ProviderAnswer> {
      requests += 1;
      const wire = WIRES[call.format];
      const input = wire.lastInput(call.body);
      const fingerprint = createHash('sha256')
        .update(`${call.format}\0${JSON.stringify(call.body)}`)
        .digest('hex');
      const attempt = (attempts.get(fingerprint) ?? 0) + 1;
      attempts.set(fingerprint, attempt);
      const plan = planReply(input, model.script ?? [], {
        offered: wire.toolNames(call.body),
        format: call.format,
        requestNumber: requests,
        callId: `call_scripted_${requests}`,
        prior: priorMessages(call.body, blocksText),
      });
      if (plan.delayMs > 0) await sleep(plan.delayMs, undefined, { signal: call.signal });
      const headers = { 'request-id': `req_scripted_${requests}`, 'x-paddock-scripted': 'true' };
      if (plan.error && (plan.error.times === undefined || attempt <= plan.error.times)) {
        const { status } = plan.error;
        const body = wire.errorBody(
          status,
          ERROR_TYPES[status] ?? 'api_error',
          `scripted error ${status} (attempt ${attempt})`,
        );
        return {
          status,
          headers: { ...headers, 'content-type': 'application/json' },
          body: once(JSON.stringify(body)),
        };
      }
      const stream = call.body.stream === true;
      // Like a real model, stop at the request's output maximum (4 characters a token).
      const maxOut = maxOutputOf(call.format, call.body);
      if (
        maxOut !== undefined &&
        plan.content.length === 1 &&
        plan.content[0]!.type === 'text' &&
        tokens(plan.content[0]!.text) > maxOut
      ) {
        plan.content = [{ type: 'text', text: plan.content[0]!.text.slice(0, maxOut * 4) }];
        plan.stopReason = 'max_tokens';
      }
      const outputText = plan.content.map((b) => (b.type === 'text' ? b.text : JSON.stringify(b.input))).join('');
      const reply: NormalizedReply = {
        id: `msg_scripted_${requests}`,
        model: model.model,
        content: plan.content,
        stopReason: plan.stopReason,
        usage: { inputTokens: tokens(JSON.stringify(call.body)), outputTokens: tokens(outputText) },
      };
      const parts = wire.render(reply, stream, plan.chunks);
      return {
        status: 200,
        headers: { ...headers, 'content-type': stream ? 'text/event-stream' : 'application/json' },
        body: paced(parts, plan.chunkDelayMs, call.signal),
      };
    },
  };
}

async function* once(text: string): AsyncIterable<string> {
  yield text;
}

async function* paced(parts: string[], delayMs: number, signal: AbortSignal): AsyncIterable<string> {
  for (const [i, part] of parts.entries()) {
    if (i > 0 && delayMs > 0) await sleep(delayMs, undefined, { signal });
    yield part;
  }
}

import { z } from 'zod';

const JsonRpcIdSchema = z.union([z.string(), z.int()]);
const ParamsSchema = z.union([z.record(z.string(), z.unknown()), z.array(z.unknown())]).optional();

/** A JSON-RPC 2.0 request (has an id). */
export const JsonRpcRequestSchema = z.strictObject({
  jsonrpc: z.literal('2.0'),
  id: JsonRpcIdSchema,
  method: z.string().min(1),
  params: ParamsSchema,
});
/** A JSON-RPC 2.0 notification (no id). */
export const JsonRpcNotificationSchema = z.strictObject({
  jsonrpc: z.literal('2.0'),
  method: z.string().min(1),
  params: ParamsSchema,
});
/** The error object of a failed response. */
export const JsonRpcErrorObjectSchema = z.looseObject({
  code: z.int(),
  message: z.string(),
  data: z.unknown().optional(),
});
/** A JSON-RPC 2.0 response: exactly one of result and error. */
export const JsonRpcResponseSchema = z.union([
  z.strictObject({ jsonrpc: z.literal('2.0'), id: JsonRpcIdSchema, result: z.unknown() }),
  z.strictObject({
    jsonrpc: z.literal('2.0'),
    id: z.union([JsonRpcIdSchema, z.null()]),
    error: JsonRpcErrorObjectSchema,
  }),
]);

export type JsonRpcRequest = z.infer<typeof JsonRpcRequestSchema>;
export type JsonRpcNotification = z.infer<typeof JsonRpcNotificationSchema>;
export type JsonRpcResponse = z.infer<typeof JsonRpcResponseSchema>;
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

/** Classify a parsed JSON value as a JSON-RPC message, or say why it is not one. */
export function classifyMessage(
  value: unknown,
):
  | { kind: 'request'; message: JsonRpcRequest }
  | { kind: 'notification'; message: JsonRpcNotification }
  | { kind: 'response'; message: JsonRpcResponse }
  | { kind: 'invalid'; reason: string } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { kind: 'invalid', reason: 'not a JSON object (batches are not used by this protocol)' };
  }
  const hasMethod = 'method' in value;
  if (hasMethod && 'id' in value) {
    const r = JsonRpcRequestSchema.safeParse(value);
    return r.success
      ? { kind: 'request', message: r.data }
      : { kind: 'invalid', reason: `invalid request: ${z.prettifyError(r.error)}` };
  }
  if (hasMethod) {
    const r = JsonRpcNotificationSchema.safeParse(value);
    return r.success
      ? { kind: 'notification', message: r.data }
      : { kind: 'invalid', reason: `invalid notification: ${z.prettifyError(r.error)}` };
  }
  const r = JsonRpcResponseSchema.safeParse(value);
  return r.success
    ? { kind: 'response', message: r.data }
    : { kind: 'invalid', reason: 'neither a request, a notification nor a response' };
}

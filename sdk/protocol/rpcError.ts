import { z } from 'zod';
import { ErrorCodes, type ErrorCode, type ErrorCodeName } from './errorCodes.js';

/** The JSON-RPC error object as it travels on the wire. */
export interface WireError {
  code: number;
  message: string;
  data?: unknown;
}

/**
 * An error that crosses the wire: a numeric code from {@link ErrorCodes}, a message and data.
 * Throw it from a request handler to answer with that code; catch it from a failed request.
 */
export class RpcError extends Error {
  override readonly name = 'RpcError';
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }

  /** The symbolic name of `code`, or undefined for a code outside the table. */
  get codeName(): ErrorCodeName | undefined {
    return (Object.keys(ErrorCodes) as ErrorCodeName[]).find((k) => ErrorCodes[k] === this.code);
  }

  /**
   * The rule that refused the request, when this error is a refusal (`data.deniedBy`, a string):
   * the one mark the host's recording layer reads to record a request as denied and audit it.
   */
  get deniedBy(): string | undefined {
    const deniedBy = (this.data as { deniedBy?: unknown } | null | undefined)?.deniedBy;
    return typeof deniedBy === 'string' ? deniedBy : undefined;
  }

  /** True when this error carries `code`. */
  is(code: ErrorCode): boolean {
    return this.code === code;
  }

  toWire(): WireError {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }

  /** Rebuild from a wire error object (unknown codes are kept as they are). */
  static fromWire(e: WireError): RpcError {
    return new RpcError(e.code, e.message, e.data);
  }

  static methodNotFound(method: string): RpcError {
    return new RpcError(ErrorCodes.MethodNotFound, `Method not found: ${method}`, { method });
  }
  static invalidParams(method: string, error: z.ZodError): RpcError {
    return new RpcError(ErrorCodes.InvalidParams, `Invalid params for ${method}: ${z.prettifyError(error)}`, {
      method,
      issues: error.issues.map((i) => ({ path: i.path.map(String), message: i.message })),
    });
  }
  static internal(message = 'Internal error'): RpcError {
    return new RpcError(ErrorCodes.InternalError, message);
  }
  static notSupported(method: string, detail?: string): RpcError {
    return new RpcError(ErrorCodes.NotSupported, `${method} is not supported by this ${detail ?? 'peer'}`, { method });
  }
  static policyDenied(reason: string, data: { deniedBy: string } & Record<string, unknown>): RpcError {
    return new RpcError(ErrorCodes.PolicyDenied, reason, data);
  }
  static runNotActive(runId: string): RpcError {
    return new RpcError(ErrorCodes.RunNotActive, `Run ${runId} is not active on this connection`, {
      runId,
      deniedBy: 'connection.activeRun',
    });
  }
  static connectionClosed(reason: string): RpcError {
    return new RpcError(ErrorCodes.ConnectionClosed, `Connection closed: ${reason}`);
  }
  static runnerExited(reason: string): RpcError {
    return new RpcError(ErrorCodes.RunnerExited, `Runner exited: ${reason}`);
  }
  static requestCancelled(reason: string): RpcError {
    return new RpcError(ErrorCodes.RequestCancelled, `Request cancelled: ${reason}`);
  }
}

import { randomUUID } from 'node:crypto';
import type { WireBindingInput, ChatEvent, ChatEventInput, Resume, RunParams } from './types.js';
import { RunParamsSchema } from './schemas/run.js';

/** A fresh run id: `run_` and a UUID. */
export function newRunId(): string {
  return `run_${randomUUID()}`;
}

/** A chat event carrying one text message, as a CLI, test or fake host sends it. */
export function textEvent(text: string, overrides: Partial<ChatEventInput> = {}): ChatEvent {
  return {
    id: `evt_${randomUUID()}`,
    type: 'message',
    platform: 'cli',
    bot: 'paddock-cli',
    conversation: { type: 'private', id: 'local' },
    sender: { id: 'local-user', name: 'You' },
    message: { parts: [{ type: 'text', text }] },
    receivedAt: new Date().toISOString(),
    ...overrides,
  } as ChatEvent;
}

/** Assemble and validate the params of a `run` request. */
export function buildRunParams(args: {
  runId: string;
  sessionId: string;
  event: ChatEventInput;
  binding: WireBindingInput;
  resume?: Resume;
  wallClockMs: number;
  goalRevision?: number;
  attempt?: number;
}): RunParams {
  return RunParamsSchema.parse({
    run: {
      runId: args.runId,
      sessionId: args.sessionId,
      goalRevision: args.goalRevision ?? 0,
      attempt: args.attempt ?? 1,
      deadline: new Date(Date.now() + args.wallClockMs).toISOString(),
    },
    event: args.event,
    binding: args.binding,
    resume: args.resume,
  });
}

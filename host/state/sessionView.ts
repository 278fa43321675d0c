import type { ExternalPointers, Usage } from '../../sdk/protocol/types.js';
import type { EventData, EventType, StoredEvent } from './events.js';

/** A value tagged with the seq of the event that set it; a higher seq wins. */
interface Versioned<T> {
  seq: number;
  value: T;
}
const later = <T>(current: Versioned<T> | undefined, seq: number, value: T): Versioned<T> =>
  current && current.seq >= seq ? current : { seq, value };

/** Run status as the log tells it. */
export type RunStatusView = 'queued' | 'running' | 'interrupted' | EventData<'run.ended'>['status'];

interface RunFold {
  runner?: string;
  status?: Versioned<RunStatusView>;
  reason?: Versioned<string>;
  queuedAt?: string;
  startedAt?: string;
  endedAt?: string;
  pid?: Versioned<{ pid: number; pidStart: number | null }>;
  finalUsage?: Versioned<Usage>;
  cumulative?: Versioned<Usage>;
  increments: Map<string, Usage>;
  deltas: Map<number, { messageId: string; text: string }>;
  messages: Map<number, { messageId: string | undefined; text: string }>;
  output?: Versioned<string>;
}

interface EffectFold {
  kind?: string;
  target?: string;
  probe?: Record<string, unknown>;
  runId: string | null;
  status?: Versioned<'succeeded' | 'failed' | 'still_running' | 'unknown'>;
  resolved: boolean;
}

/** The fold state of one session (mutable; build with {@link emptySession}). */
export interface SessionFold {
  seen: Set<string>;
  maxSeq: number;
  bindingId?: string;
  conversationKey?: string;
  runs: Map<string, RunFold>;
  userMessages: Map<number, string>;
  external?: Versioned<ExternalPointers>;
  effects: Map<string, EffectFold>;
  pause?: Versioned<{ paused: boolean; reason: string }>;
  interrupted: Map<string, { seq: number; reason: string }>;
  recoveryDelivered: Set<string>;
}

/** A fresh fold state. */
export function emptySession(): SessionFold {
  return {
    seen: new Set(),
    maxSeq: 0,
    runs: new Map(),
    userMessages: new Map(),
    effects: new Map(),
    interrupted: new Map(),
    recoveryDelivered: new Set(),
  };
}

const runOf = (s: SessionFold, runId: string): RunFold => {
  let run = s.runs.get(runId);
  if (!run) s.runs.set(runId, (run = { increments: new Map(), deltas: new Map(), messages: new Map() }));
  return run;
};
const effectOf = (s: SessionFold, effectId: string, runId: string | null): EffectFold => {
  let effect = s.effects.get(effectId);
  if (!effect) s.effects.set(effectId, (effect = { runId, resolved: false }));
  return effect;
};
const textOf = (parts: { type: string; text?: string }[]) =>
  parts.map((p) => (p.type === 'text' ? (p.text ?? '') : '')).join('');

/**
 * Fold one event into the session state. Idempotent (an event id is folded once) and
 * order-independent (each field keeps the value of its highest-seq event; sums are over distinct
 * event ids), so a duplicated or permuted log folds to the same state as the clean one.
 */
export function foldEvent(s: SessionFold, e: StoredEvent): void {
  if (s.seen.has(e.id)) return;
  s.seen.add(e.id);
  s.maxSeq = Math.max(s.maxSeq, e.seq);
  const { seq } = e;
  const data = e.data as EventData<EventType>;
  const run = e.runId ? runOf(s, e.runId) : undefined;
  switch (e.type) {
    case 'session.created': {
      const d = data as EventData<'session.created'>;
      s.bindingId = d.bindingId;
      s.conversationKey = d.conversationKey;
      return;
    }
    case 'message.received': {
      const d = data as EventData<'message.received'>;
      s.userMessages.set(seq, textOf(d.event.message.parts as { type: string; text?: string }[]));
      return;
    }
    case 'run.queued': {
      const d = data as EventData<'run.queued'>;
      run!.runner = d.runner;
      run!.queuedAt = e.at;
      run!.status = later(run!.status, seq, 'queued');
      return;
    }
    case 'run.started': {
      const d = data as EventData<'run.started'>;
      run!.startedAt = e.at;
      run!.status = later(run!.status, seq, 'running');
      run!.pid = later(run!.pid, seq, { pid: d.pid, pidStart: d.pidStart ?? null });
      for (const runId of d.recoveryDelivered ?? []) s.recoveryDelivered.add(runId);
      return;
    }
    case 'run.update': {
      const { update } = data as EventData<'run.update'>;
      if (update.kind === 'message.delta')
        run!.deltas.set(seq, { messageId: update.messageId ?? '', text: update.text });
      else if (update.kind === 'message')
        run!.messages.set(seq, {
          messageId: update.messageId,
          text: textOf(update.parts as { type: string; text?: string }[]),
        });
      else if (update.kind === 'usage') {
        if (update.cumulative) run!.cumulative = later(run!.cumulative, seq, update.usage);
        else run!.increments.set(e.id, update.usage);
      }
      return;
    }
    case 'run.ended': {
      const d = data as EventData<'run.ended'>;
      run!.endedAt = e.at;
      run!.status = later(run!.status, seq, d.status);
      run!.reason = later(run!.reason, seq, d.reason);
      const usage = d.usage ?? d.result?.usage; // host-metered first (docs/state.md)
      if (usage) run!.finalUsage = later(run!.finalUsage, seq, usage as Usage);
      const output = d.result?.output ? textOf(d.result.output.parts as { type: string; text?: string }[]) : '';
      if (output) run!.output = later(run!.output, seq, output);
      return;
    }
    case 'run.interrupted': {
      const d = data as EventData<'run.interrupted'>;
      run!.endedAt = e.at;
      run!.status = later(run!.status, seq, 'interrupted');
      run!.reason = later(run!.reason, seq, d.reason);
      s.interrupted.set(e.runId!, { seq, reason: d.reason });
      return;
    }
    case 'external.saved':
      s.external = later(s.external, seq, (data as EventData<'external.saved'>).external);
      return;
    case 'effect.intent': {
      const d = data as EventData<'effect.intent'>;
      const effect = effectOf(s, d.effectId, e.runId);
      Object.assign(effect, { kind: d.kind, target: d.target, probe: d.probe });
      return;
    }
    case 'effect.result':
    case 'effect.reconciled':
    case 'effect.resolved': {
      const d = data as { effectId: string; status: 'succeeded' | 'failed' | 'still_running' | 'unknown' };
      const effect = effectOf(s, d.effectId, e.runId);
      effect.status = later(effect.status, seq, d.status);
      if (e.type === 'effect.resolved') effect.resolved = true;
      return;
    }
    case 'session.paused':
      s.pause = later(s.pause, seq, { paused: true, reason: (data as EventData<'session.paused'>).reason });
      return;
    case 'session.resumed':
      s.pause = later(s.pause, seq, { paused: false, reason: '' });
      return;
  }
}

/** One line of a session transcript. */
export interface TranscriptEntry {
  seq: number;
  role: 'user' | 'assistant';
  runId: string | null;
  text: string;
}

/** The read model of a session: plain data, comparable with deep equality. */
export interface SessionView {
  sessionId: string;
  bindingId: string | null;
  maxSeq: number;
  runs: {
    runId: string;
    runner: string | null;
    status: RunStatusView | null;
    reason: string | null;
    usage: Usage | null;
    pid: number | null;
    pidStart: number | null;
  }[];
  transcript: TranscriptEntry[];
  external: ExternalPointers | null;
  openEffects: {
    effectId: string;
    kind: string | null;
    target: string | null;
    runId: string | null;
    status: string | null;
    probe: Record<string, unknown> | null;
  }[];
  paused: { reason: string } | null;
  /** Interrupted runs whose recovery summary has not been delivered to a later run yet, with their effects. */
  pendingRecovery: {
    runId: string;
    reason: string;
    effects: {
      id: string;
      kind: string;
      status: 'succeeded' | 'failed' | 'still_running' | 'unknown';
      summary: string;
    }[];
  }[];
}

function usageOf(run: RunFold): Usage | null {
  if (run.finalUsage) return run.finalUsage.value;
  if (run.cumulative) return run.cumulative.value;
  if (run.increments.size === 0) return null;
  const sum: Record<string, number> = {};
  for (const usage of [...run.increments.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, u]) => u)) {
    for (const [k, v] of Object.entries(usage)) if (typeof v === 'number') sum[k] = (sum[k] ?? 0) + v;
  }
  return sum as Usage;
}

function assistantLines(runId: string, run: RunFold): TranscriptEntry[] {
  const lines: TranscriptEntry[] = [...run.messages.entries()].map(([seq, m]) => ({
    seq,
    role: 'assistant' as const,
    runId,
    text: m.text,
  }));
  const withFullMessage = new Set([...run.messages.values()].map((m) => m.messageId).filter((id) => id !== undefined));
  const streams = new Map<string, { seq: number; text: string }>();
  for (const [seq, d] of [...run.deltas.entries()].sort(([a], [b]) => a - b)) {
    if (withFullMessage.has(d.messageId)) continue;
    const stream = streams.get(d.messageId);
    if (stream) stream.text += d.text;
    else streams.set(d.messageId, { seq, text: d.text });
  }
  for (const stream of streams.values()) lines.push({ seq: stream.seq, role: 'assistant', runId, text: stream.text });
  if (lines.length === 0 && run.output)
    lines.push({ seq: run.output.seq, role: 'assistant', runId, text: run.output.value });
  return lines;
}

/** Read the session view out of a fold state. */
export function viewSession(sessionId: string, s: SessionFold): SessionView {
  const runs = [...s.runs.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
  const transcript = [
    ...[...s.userMessages.entries()].map(([seq, text]) => ({ seq, role: 'user' as const, runId: null, text })),
    ...runs.flatMap(([runId, run]) => assistantLines(runId, run)),
  ].sort((a, b) => a.seq - b.seq);
  return {
    sessionId,
    bindingId: s.bindingId ?? null,
    maxSeq: s.maxSeq,
    runs: runs.map(([runId, run]) => ({
      runId,
      runner: run.runner ?? null,
      status: run.status?.value ?? null,
      reason: run.reason?.value ?? null,
      usage: usageOf(run),
      pid: run.pid?.value.pid ?? null,
      pidStart: run.pid?.value.pidStart ?? null,
    })),
    transcript,
    external: s.external?.value ?? null,
    openEffects: [...s.effects.entries()]
      .filter(
        ([, e]) =>
          !e.resolved && (e.status === undefined || e.status.value === 'unknown' || e.status.value === 'still_running'),
      )
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([effectId, e]) => ({
        effectId,
        kind: e.kind ?? null,
        target: e.target ?? null,
        runId: e.runId,
        status: e.status?.value ?? null,
        probe: e.probe ?? null,
      })),
    paused: s.pause?.value.paused ? { reason: s.pause.value.reason } : null,
    pendingRecovery: [...s.interrupted.entries()]
      .filter(([runId]) => !s.recoveryDelivered.has(runId))
      .sort(([, a], [, b]) => a.seq - b.seq)
      .map(([runId, i]) => ({
        runId,
        reason: i.reason,
        effects: [...s.effects.entries()]
          .filter(([, e]) => e.runId === runId && e.kind !== undefined)
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(([id, e]) => ({
            id,
            kind: e.kind!,
            status: e.status?.value ?? 'unknown',
            summary: `${e.kind} ${e.target ?? ''}`.trim(),
          })),
      })),
  };
}

/** Fold a whole list of events. */
export function foldAll(sessionId: string, events: Iterable<StoredEvent>): SessionView {
  const state = emptySession();
  for (const e of events) foldEvent(state, e);
  return viewSession(sessionId, state);
}

/** What a run's start needs of its session: the fields of {@link SessionView} that decide its resume and refusal. */
export type SessionControl = Pick<SessionView, 'external' | 'openEffects' | 'paused' | 'pendingRecovery'>;

/**
 * The event types {@link SessionControl}'s fields are folded from (`external.saved`; effects; pauses; interruptions
 * and the `run.started` that delivered them): a fold of only these gives those fields exactly as the whole log does,
 * since each field keeps its own events' values (the fold is per field and order-independent).
 */
export const CONTROL_EVENT_TYPES = [
  'external.saved',
  'effect.intent',
  'effect.result',
  'effect.reconciled',
  'effect.resolved',
  'session.paused',
  'session.resumed',
  'run.interrupted',
  'run.started',
] as const satisfies readonly EventType[];

/** The control fields of a fold of `events` (all of a session's events of {@link CONTROL_EVENT_TYPES}, or more). */
export function foldControl(sessionId: string, events: Iterable<StoredEvent>): SessionControl {
  const { external, openEffects, paused, pendingRecovery } = foldAll(sessionId, events);
  return { external, openEffects, paused, pendingRecovery };
}

/** The event types a run's history is computed from (host/runs/history.ts `sessionHistory`). */
export const HISTORY_EVENT_TYPES = [
  'message.received',
  'run.queued',
  'run.ended',
] as const satisfies readonly EventType[];

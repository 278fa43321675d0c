import { terminalSafe } from '../util/terminalText.js';
import type { Resume, Update } from '../../sdk/protocol/types.js';
import type { IsolationReport } from '../process/isolationReport.js';
import type { RunOutcome } from '../process/outcome.js';

/** The header's network line: the report's own description (the same string explain and --json show). */
export function networkLine(isolation: IsolationReport): string {
  return `network: ${isolation.network}`;
}

/** Shows a run on a terminal or as NDJSON. */
export interface Renderer {
  started(info: {
    runId: string;
    sessionId: string;
    runner: string;
    isolation: IsolationReport;
    resume?: Resume;
  }): void;
  update(update: Update, seq: number): void;
  note(text: string): void;
  outcome(outcome: RunOutcome): void;
}

/** One JSON object per line on stdout: `started`, `update`…, `outcome`. */
export function jsonRenderer(out: NodeJS.WritableStream = process.stdout): Renderer {
  // JSON.stringify leaves C1 and bidi controls raw; terminalSafe writes them as `\uXXXX` (still the same JSON).
  const line = (value: unknown) => out.write(`${terminalSafe(JSON.stringify(value))}\n`);
  return {
    started: (info) => line({ type: 'started', ...info }),
    update: (update, seq) => line({ type: 'update', seq, update }),
    note: (text) => line({ type: 'note', text }),
    outcome: (outcome) => line({ type: 'outcome', outcome }),
  };
}

/** A readable view: streamed text inline, other updates as dim lines, a status line at the end. */
export function humanRenderer(out: NodeJS.WriteStream = process.stdout): Renderer {
  const color = out.isTTY === true && !process.env.NO_COLOR;
  const dim = (s: string) => (color ? `\x1b[2m${s}\x1b[0m` : s);
  const paint = (ok: boolean, s: string) => (color ? `\x1b[${ok ? 32 : 31}m${s}\x1b[0m` : s);
  let midLine = false;
  let streamed = false;
  // tool.finished carries only the call id: name the tool the user saw start (ids are opaque, e.g. toolu_01…).
  const toolNames = new Map<string, string>();
  // Everything a runner said is shown through terminalSafe: no escape sequence of its own acts.
  const meta = (text: string) => {
    if (midLine) out.write('\n');
    midLine = false;
    out.write(`${dim(terminalSafe(text))}\n`);
  };
  return {
    started: (info) => {
      meta(`▶ run ${info.runId} · session ${info.sessionId} · runner ${info.runner}`);
      if (info.resume?.recovery) meta(`  resuming after an interruption: ${info.resume.recovery.summary}`);
      if (info.resume?.external) meta(`  continuing external session ${JSON.stringify(info.resume.external)}`);
      const gaps = info.isolation.notEnforced.map((g) => g.split(':')[0]);
      meta(
        `  isolation: ${info.isolation.backend} backend (${info.isolation.strength}) — ` +
          `${gaps.length ? `NOT enforced: ${gaps.join('; ')}` : 'namespaces, read-only system, limits'}. See ` +
          `docs/security-model.md`,
      );
      meta(`  ${networkLine(info.isolation)}`);
    },
    update(update) {
      switch (update.kind) {
        case 'message.delta':
          // The host holds back a message's last characters until it knows they hold no secret: a delta can be empty.
          if (!update.text) return;
          out.write(terminalSafe(update.text, true));
          midLine = !update.text.endsWith('\n');
          streamed = true;
          return;
        case 'message':
          meta('');
          out.write(
            `${terminalSafe(update.parts.map((p) => (p.type === 'text' ? p.text : `[${p.type}]`)).join(''), true)}\n`,
          );
          streamed = true;
          return;
        case 'tool.started': {
          const command = (update.input as { command?: unknown } | undefined)?.command;
          const detail = update.title ?? (typeof command === 'string' ? command : undefined);
          toolNames.set(update.toolCallId, update.name);
          return meta(
            `⚙ ${update.name}${detail ? ` — ${detail.length > 200 ? `${detail.slice(0, 200)}…` : detail}` : ''}`,
          );
        }
        case 'tool.finished':
          return meta(
            `⚙ ${toolNames.get(update.toolCallId) ?? 'tool'} ` +
              `${update.status}${update.error ? `: ${update.error}` : ''}`,
          );
        case 'progress':
          return meta(`… ${update.message}${update.percent !== undefined ? ` (${update.percent}%)` : ''}`);
        case 'usage':
          // The runner's own figures, not the host's meter (shown at the end of the run).
          return meta(`Σ runner reports (unverified): ${JSON.stringify(update.usage)}`);
        case 'artifact':
          return meta(`📎 ${update.name} (${update.path})`);
        case 'log':
          return meta(`[${update.level}] ${update.message}`);
      }
    },
    note: (text) => meta(text),
    outcome(outcome) {
      const text = outcome.result?.output?.parts.map((p) => (p.type === 'text' ? p.text : `[${p.type}]`)).join('');
      if (!streamed && text) out.write(`${terminalSafe(text, true)}\n`);
      if (midLine) out.write('\n');
      midLine = false;
      const ok = outcome.status === 'completed';
      out.write(
        `${paint(ok, `${ok ? '✓' : '✗'} ${outcome.status}`)} ` +
          `${dim(`in ${outcome.durationMs} ms — ${terminalSafe(outcome.reason)}`)}\n`,
      );
      if (outcome.usage) out.write(dim(`${describeUsage(outcome.usage)}\n`));
      if (!ok && outcome.stderrTail.trim())
        out.write(dim(`runner stderr (tail):\n${terminalSafe(outcome.stderrTail.trimEnd(), true)}\n`));
      if (outcome.survivors.length > 0)
        out.write(paint(false, `! processes survived the run: ${outcome.survivors.join(', ')}\n`));
    },
  };
}

/** One line for a run's usage: the host's meter first, the runner's claim labelled as such. */
export function describeUsage(usage: NonNullable<RunOutcome['usage']>): string {
  const metered =
    `usage (metered by the host gateway): ${usage.modelCalls ?? 0} model call(s), ${usage.inputTokens ?? 0} ` +
    `input + ${usage.outputTokens ?? 0} output tokens, $${(usage.costUsd ?? 0).toFixed(4)}`;
  const claim = usage.reportedByRunner;
  return claim ? `${metered} · runner reported (unverified): ${JSON.stringify(claim)}` : metered;
}

// The runner's logger loads pino at its first use only (sdk/logger.ts): a runner that never logs never imports it.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { createRunnerLogger, lazyLogger } from '../../../sdk/logger.js';

/** A real pino logger writing its lines into `lines`. */
const capturing = (lines: string[]) =>
  pino(
    { base: undefined, timestamp: false },
    new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(chunk.toString().trim()), done()) }),
  );

describe('lazyLogger', () => {
  it('creates nothing until a log call; a child made before it logs with its bindings', () => {
    const lines: string[] = [];
    const create = vi.fn(() => capturing(lines));
    const log = lazyLogger(create);
    const child = log.child({ runId: 'run_1' });
    expect(create).not.toHaveBeenCalled();
    child.info({ n: 1 }, 'hello');
    log.warn('parent');
    expect(create).toHaveBeenCalledTimes(1);
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
      { level: 30, runId: 'run_1', n: 1, msg: 'hello' },
      { level: 40, msg: 'parent' },
    ]);
  });

  it('reads and sets properties on the real logger (level), and answers isLevelEnabled', () => {
    const log = lazyLogger(() => capturing([]));
    expect(log.level).toBe('info');
    log.level = 'debug';
    expect(log.isLevelEnabled('debug')).toBe(true);
    expect('child' in log).toBe(true);
  });

  it("the runner logger is pino's, created at its first use with the runner's name", () => {
    const log = createRunnerLogger('echo');
    expect(log.child({ runId: 'r' }).bindings()).toEqual({ runner: 'echo', name: 'echo', runId: 'r' });
  });
});

import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';

/**
 * YAML from outside (the admin API's `POST /v1/config/apply` with `yaml`) parsed in a child Node process with a time
 * and a memory bound, never in the host: the `yaml` parser recurses per nesting level and its cost is not linear in
 * its input. A 200 KB line of `- ` made the host abort out of memory (a V8 fatal error, which no `catch` and no worker
 * thread contains), and 1 MB texts shaped against any one-pass pre-check kept it busy 2–24 s (docs/decisions.md,
 * "Issue 13 — the third attack's findings", E1). The child also measures what it built, without recursion: deeper
 * than `depth` (aliases included, a cycle is infinitely deep) or larger than `bytes` as JSON (aliases expanded) is
 * refused there, so what comes back is plain JSON within both bounds (`bytes` counted in UTF-8, as stored).
 */

/** What reading the text gave: the value, or why there is none. */
export type IsolatedYaml =
  | { value: unknown }
  | { problem: 'too_deep' | 'too_large' | 'invalid' | 'too_slow' | 'failed' | 'busy'; message: string };

/** Readers running at once in this process: each is a Node process of up to 256 MB; more are answered `busy`. */
export const MAX_YAML_READERS = 2;
/** Readers one owner (a tenant) may hold at once: one tenant's texts never take every reader. */
export const MAX_YAML_READERS_PER_OWNER = 1;
let readers = 0;
const readersOf = new Map<string, number>();

/** The bounds of one read. */
export interface YamlBounds {
  /** Deepest nesting of objects and arrays allowed in the value. */
  depth: number;
  /** Largest size of the value written as JSON. */
  bytes: number;
  /** How long the child may take (default 5 s). */
  timeoutMs?: number;
  /** Whose text it is (a tenant): each owner holds at most {@link MAX_YAML_READERS_PER_OWNER} readers. */
  owner?: string;
}

/** The child's program: read stdin, parse, measure, answer one JSON line on stdout. Arguments: yaml path, bounds. */
const CHILD = `
const [yamlPath, depthLimit, byteLimit] = process.argv.slice(1);
const { parse } = require(yamlPath);
const answer = (a) => process.stdout.write(JSON.stringify(a));
const chunks = [];
process.stdin.on('data', (c) => chunks.push(c)).on('end', () => {
  let value;
  try {
    value = parse(Buffer.concat(chunks).toString('utf8'), { prettyErrors: true }) ?? {};
  } catch (e) {
    const line = e && e.linePos ? ' (line ' + e.linePos[0].line + ')' : '';
    return answer({ problem: 'invalid', message: line.trim() + (line ? ': ' : '') + 'not valid YAML: ' +
      String(e && e.message).split('\\n')[0] });
  }
  // A first pass bounds the work: it counts characters (UTF-16 units; a date as its ISO string) and stops once the
  // bound is passed, before anything as large as an alias-expanded text is built. The bound itself is checked on the
  // JSON as written back, in UTF-8 bytes: what is stored.
  let size = 0;
  const stack = [[value, 0]];
  while (stack.length > 0) {
    let [item, depth] = stack.pop();
    if (item !== null && typeof item === 'object' && typeof item.toJSON === 'function') item = item.toJSON();
    if (typeof item === 'string') size += item.length + 2;
    else if (item === null || typeof item !== 'object') size += String(item).length;
    else {
      if (depth + 1 > Number(depthLimit)) return answer({ problem: 'too_deep' });
      const entries = Object.entries(item);
      size += 2 + entries.length;
      for (const [key, child] of entries) {
        if (!Array.isArray(item)) size += key.length + 3;
        stack.push([child, depth + 1]);
      }
    }
    if (size > Number(byteLimit)) return answer({ problem: 'too_large' });
  }
  const json = JSON.stringify(value);
  if (Buffer.byteLength(json) > Number(byteLimit)) return answer({ problem: 'too_large' });
  process.stdout.write('{"value":' + json + '}');
});
`;

/** Where the child loads the parser from: the host's own `yaml` package. */
const YAML_PATH = createRequire(import.meta.url).resolve('yaml');

/** Parse `text` in a child process within `bounds`; never throws for anything in the text. */
export function parseYamlIsolated(text: string, bounds: YamlBounds): Promise<IsolatedYaml> {
  const timeoutMs = bounds.timeoutMs ?? 5_000;
  const owner = bounds.owner;
  if (readers >= MAX_YAML_READERS)
    return Promise.resolve({ problem: 'busy', message: `${MAX_YAML_READERS} YAML texts are being read already` });
  if (owner !== undefined && (readersOf.get(owner) ?? 0) >= MAX_YAML_READERS_PER_OWNER)
    return Promise.resolve({ problem: 'busy', message: `a YAML text of this tenant is being read already` });
  readers += 1;
  if (owner !== undefined) readersOf.set(owner, (readersOf.get(owner) ?? 0) + 1);
  return new Promise<IsolatedYaml>((resolve) => {
    const child = spawn(
      process.execPath,
      ['--max-old-space-size=256', '-e', CHILD, YAML_PATH, String(bounds.depth), String(bounds.bytes)],
      { env: {}, stdio: ['pipe', 'pipe', 'ignore'] },
    );
    const out: Buffer[] = [];
    let outBytes = 0;
    // The answer is the value's JSON, checked against `bytes` in the child, and a little framing.
    const maxOut = bounds.bytes + 64 * 1024;
    let settled = false;
    const settle = (answer: IsolatedYaml) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill('SIGKILL');
      resolve(answer);
    };
    const timer = setTimeout(
      () => settle({ problem: 'too_slow', message: `took longer than ${timeoutMs} ms to read` }),
      timeoutMs,
    );
    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > maxOut) settle({ problem: 'failed', message: 'its reader answered more than it may' });
      else out.push(chunk);
    });
    child.on('error', (error) => settle({ problem: 'failed', message: `its reader did not start: ${error.message}` }));
    child.on('close', (code, signal) => {
      if (settled) return;
      if (code !== 0)
        return settle({ problem: 'failed', message: `its reader ended with ${signal ?? `exit code ${code}`}` });
      try {
        const answer = JSON.parse(Buffer.concat(out).toString('utf8')) as
          { value: unknown } | { problem: 'too_deep' | 'too_large' | 'invalid'; message?: string };
        if ('value' in answer) settle({ value: answer.value });
        else settle({ problem: answer.problem, message: answer.message ?? answer.problem });
      } catch {
        settle({ problem: 'failed', message: 'its reader gave no answer' });
      }
    });
    // A child that died early closes stdin: the write fails, the close handler answers.
    child.stdin.on('error', () => undefined);
    child.stdin.end(text);
  }).finally(() => {
    readers -= 1;
    if (owner === undefined) return;
    const left = readersOf.get(owner)! - 1;
    if (left === 0) readersOf.delete(owner);
    else readersOf.set(owner, left);
  });
}

// A store fixture as a real second process (test/fixtures/*.ts that print "ready", wait for "go", print one JSON line).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { repoPath } from './fixtures.js';

/** Start a store fixture; resolves once it printed "ready", with its final line (JSON) as a promise. */
export async function storeProcess(fixture: string, args: string[]) {
  const child = spawn(process.execPath, ['--import', 'tsx', repoPath(`test/fixtures/${fixture}`), ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const lines = createInterface({ input: child.stdout });
  const iterator = lines[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.value !== 'ready') throw new Error(`${fixture} did not start: ${stderr}`);
  const done = (async () => {
    const last = await iterator.next();
    const code = await new Promise<number | null>((resolve) =>
      child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', resolve),
    );
    if (code !== 0 || last.done) throw new Error(`${fixture} failed (exit ${code}): ${stderr}`);
    return JSON.parse(last.value as string) as unknown;
  })();
  return { go: () => child.stdin.end('go\n'), done };
}

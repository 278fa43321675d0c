/**
 * The helper spawner's program (CommonJS, for `node -e`; helperSpawner.ts is the host's side): one JSON request a line
 * on stdin (`{id, file, args, env, timeoutMs}`), each run with `execFile`, whose timeout starts when the helper starts,
 * one JSON answer a line on stdout (with `ms`, the helper's own time); it exits when its stdin ends (the host went).
 * It runs whatever it is sent: the host decides how many run at once.
 */
export const HELPER_SPAWNER_PROGRAM = `
const { execFile } = require('node:child_process');
let rest = '';
const answer = (a) => process.stdout.write(JSON.stringify(a) + '\\n');
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  const lines = (rest + chunk).split('\\n');
  rest = lines.pop();
  for (const line of lines) {
    const r = JSON.parse(line);
    const failed = (e) => ({ message: e.message, code: e.code, killed: e.killed, signal: e.signal });
    const start = Date.now();
    try {
      const options = { env: r.env, encoding: 'utf8', timeout: r.timeoutMs, maxBuffer: 16 << 20 };
      const child = execFile(r.file, r.args, options, (e, stdout, stderr) =>
        answer({ id: r.id, stdout, stderr, error: e ? failed(e) : null, ms: Date.now() - start }));
      child.stdin && child.stdin.end();
    } catch (e) {
      // Refused before it started (a NUL in an argument): that request fails, the spawner and the others go on.
      answer({ id: r.id, stdout: '', stderr: '', error: failed(e), ms: 0 });
    }
  }
});
process.stdin.on('end', () => process.exit(0));
`;

// node --import tsx scripts/installHarnesses.ts <prefix>
// The npm install of scripts/install-harnesses.sh (the pinned harness CLIs, about 1.2 GB), with its progress on
// stderr instead of a silent wait: the phase (resolving the pinned versions, then downloading and unpacking), the
// packages on disk of those the lock puts there, the bytes unpacked so far and the time since the start — one line
// rewritten in place on a terminal, a line every 5 s at most to a pipe (CI logs stay short; host/util/progress.ts).
// npm's own output (its http log: every fetch and cache hit) goes to <prefix>/install.log. Exit code: npm's.
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { formatBytes, formatDuration, progressLine } from '../host/util/progress.js';
import { packagesToInstall, watchInstall } from '../host/packages/npmInstallProgress.js';

/** npm's flags for the harness install (no audit or fund noise; the CLIs' engines field is too strict for Node 20). */
const NPM_FLAGS = ['--no-audit', '--no-fund', '--engine-strict=false', '--loglevel=http', '--no-progress'];

/** Run npm in the prefix with its output appended to the log; resolves with its exit code. */
function npm(prefix: string, args: string[], log: number): Promise<number> {
  return new Promise((done, fail) => {
    const child = spawn('npm', [...args, '--prefix', prefix, ...NPM_FLAGS], {
      cwd: prefix,
      stdio: ['ignore', log, log],
    });
    child.on('error', fail);
    child.on('close', (code, signal) => done(code ?? (signal ? 128 : 1)));
  });
}

const prefix = resolve(process.argv[2] ?? '.harness');
const started = performance.now();
const progress = progressLine('harness', 'packages', process.stderr, () => performance.now(), { elapsed: true });
const log = openSync(join(prefix, 'install.log'), 'w');
let code: number;
try {
  progress.phase('resolving the pinned versions');
  const ticking = setInterval(() => progress.tick(), 1000);
  code = await npm(prefix, ['install', '--package-lock-only'], log).finally(() => clearInterval(ticking));
  if (code === 0) {
    const packages = packagesToInstall(JSON.parse(readFileSync(join(prefix, 'package-lock.json'), 'utf8')));
    progress.phase('downloading and unpacking');
    const stop = watchInstall(prefix, packages, ({ done, total, bytes }) =>
      progress.update(done, total, `${formatBytes(bytes)} on disk`),
    );
    code = await npm(prefix, ['install'], log).finally(() => {
      const { done, bytes } = stop();
      progress.finish();
      process.stderr.write(
        `harness: ${done} of ${packages.length} packages on disk (${formatBytes(bytes)}) after ` +
          `${formatDuration(performance.now() - started)}\n`,
      );
    });
  } else progress.finish();
} finally {
  closeSync(log);
}
process.exit(code);

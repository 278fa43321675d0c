// Runner packages for the install tests (docs/runner-packages.md): a folder with package.json, runner.json and a
// plain-JS runner that speaks the protocol by hand (no SDK: an installed package cannot import the repo's). The
// runner names its own id and version in `initialize`, so a test reads which version a run ran.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { emptyFolder } from './packageTree.js';

/** What a test runner package asks for and does at install. */
export interface TestPackage {
  id: string;
  version: string;
  hostRequests?: string[];
  effects?: string[];
  env?: Record<string, string>;
  risk?: string;
  /** The manifest's install.nativeBuild. */
  nativeBuild?: boolean;
  /** Lifecycle scripts that each write a marker file named after the script into this folder. */
  markers?: string;
  /** package.json fields to set over the defaults (a wrong name, keywords, …). */
  packageJson?: Record<string, unknown>;
}

const RUNNER_JS = `import { createInterface } from 'node:readline';
import { readFileSync } from 'node:fs';
const manifest = JSON.parse(readFileSync(new URL('./runner.json', import.meta.url), 'utf8'));
const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.method === 'initialize')
    send({
      id: msg.id,
      result: {
        protocolVersion: 1,
        runner: { name: manifest.id, version: manifest.version },
        capabilities: { cancel: false },
      },
    });
  else if (msg.method === 'run') {
    const runId = msg.params.run.runId;
    const update = { kind: 'message.delta', text: manifest.id + '@' + manifest.version };
    send({ method: 'run/update', params: { runId, seq: 1, update } });
    send({ id: msg.id, result: { status: 'completed' } });
  } else if (msg.method === 'shutdown') { send({ id: msg.id, result: {} }); process.exit(0); }
});
`;

/** Write the package into a new folder; answers the folder. */
export function writeTestPackage(p: TestPackage): string {
  const dir = join(emptyFolder(), `paddock-runner-${p.id}`);
  mkdirSync(dir);
  const touch = (name: string) =>
    `node -e "require('fs').writeFileSync('${join(p.markers ?? '/nonexistent', name)}', '')"`;
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({
      name: `paddock-runner-${p.id}`,
      version: p.version,
      keywords: ['paddock-runner'],
      ...(p.markers
        ? { scripts: Object.fromEntries(['preinstall', 'install', 'postinstall', 'prepare'].map((s) => [s, touch(s)])) }
        : {}),
      ...p.packageJson,
    }),
  );
  writeFileSync(
    join(dir, 'runner.json'),
    JSON.stringify({
      id: p.id,
      name: `Test ${p.id}`,
      version: p.version,
      protocolVersion: 1,
      entry: { node: 'index.mjs' },
      capabilities: { hostRequests: p.hostRequests ?? [] },
      effects: p.effects ?? [],
      env: p.env ?? {},
      risk: p.risk ?? 'None: it only talks.',
      ...(p.nativeBuild ? { install: { nativeBuild: true } } : {}),
    }),
  );
  writeFileSync(join(dir, 'index.mjs'), RUNNER_JS);
  return dir;
}

/** `npm pack` a package folder (offline, scripts off) into a new folder; answers the tarball's path. */
export function packTestPackage(dir: string): string {
  const out = emptyFolder();
  execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', out, dir], { stdio: 'ignore' });
  return join(out, readdirSync(out)[0]!);
}

import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HostError } from '../../../host/errors.js';
import { loadManifest, resolveRunner, runnerCommand } from '../../../host/plugins/resolveRunner.js';

function runnerDir(manifest: unknown, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-manifest-'));
  writeFileSync(join(dir, 'runner.json'), typeof manifest === 'string' ? manifest : JSON.stringify(manifest));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}
const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const BUNDLES = mkdtempSync(join(tmpdir(), 'paddock-bundles-'));
const base = {
  id: 'ok-runner',
  name: 'OK',
  version: '1.0.0',
  protocolVersion: 1,
  entry: { command: 'python3', args: ['{runnerDir}/r.py'] },
};

function hostError(fn: () => unknown): HostError {
  try {
    fn();
  } catch (error) {
    if (error instanceof HostError) return error;
    throw error;
  }
  throw new Error('expected a HostError');
}

describe('runner manifests', () => {
  it('resolves a built-in runner by name and a runner folder by path', () => {
    expect(resolveRunner('echo').manifest.id).toBe('echo');
    const dir = runnerDir(base);
    expect(resolveRunner(dir).manifest.name).toBe('OK');
  });

  it.each([
    ['not json', '{ "id": ', /runner\.json: .*JSON/],
    ['missing entry', { ...base, entry: undefined }, /field entry: /],
    ['bad id', { ...base, id: 'Has Spaces' }, /field id: lowercase letters/],
    ['reserved env', { ...base, env: { CLAUDECODE: '1' } }, /field env\.CLAUDECODE: CLAUDECODE is read by the host/],
    ['unknown field', { ...base, entrypoint: 'x' }, /field \(root\): Unrecognized key: "entrypoint"/],
    [
      'unknown host request',
      { ...base, capabilities: { hostRequests: ['shell/exec'] } },
      /field capabilities\.hostRequests\.0/,
    ],
  ])('refuses a manifest with %s, naming the file and the field', (_name, manifest, message) => {
    const dir = runnerDir(manifest);
    const error = hostError(() => loadManifest(dir));
    expect(error.code).toBe('MANIFEST_INVALID');
    expect(error.message).toContain(join(dir, 'runner.json'));
    expect(error.message).toMatch(message);
  });

  it.each([
    'PATH',
    'LD_PRELOAD',
    'LD_LIBRARY_PATH',
    'LD_AUDIT',
    'NODE_OPTIONS',
    'NODE_PATH',
    'BASH_ENV',
    'ENV',
    'PYTHONPATH',
    'PYTHONSTARTUP',
    'PERL5LIB',
    'PERL5OPT',
    'RUBYOPT',
    'GCONV_PATH',
    'MY_PRELOAD',
    'HTTPS_PROXY',
    'NO_PROXY',
    'GIT_SSH_COMMAND',
    'SSL_CERT_FILE',
    'LC_ALL',
    'HOME',
    'TMPDIR',
    'PADDOCK_RUN_ID',
    'PADDOCK_RUN_TOKEN',
    'PADDOCK_HOME',
    'MALLOC_CHECK_',
    'GLIBC_TUNABLES',
    'CLAUDECODE',
    'OTHER_RUNNER_X',
    'OK_RUNNER',
    'PADDOCK_RUNNER_',
    'ok_runner_x',
    'OK-RUNNER_X',
  ])('refuses env.%s (allowlist: the runner namespace only, never a name the host or a loader reads)', (name) => {
    const error = hostError(() => loadManifest(runnerDir({ ...base, env: { [name]: 'x' } })));
    expect(error.code).toBe('MANIFEST_INVALID');
    expect(error.message).toContain(`field env.${name}: `);
  });

  it.each([
    ['ld', 'LD_PRELOAD'],
    ['node', 'NODE_OPTIONS'],
    ['paddock', 'PADDOCK_RUN_TOKEN'],
    ['python', 'PYTHON_PATHX'],
    ['git', 'GIT_DIR'],
  ])('a runner id %s cannot open %s through its own prefix', (id, name) => {
    expect(hostError(() => loadManifest(runnerDir({ ...base, id, env: { [name]: 'x' } }))).message).toContain(
      `field env.${name}: ${name} is read by the host`,
    );
  });

  it('accepts PADDOCK_RUNNER_* and the id prefix, and reports every bad name at once', () => {
    expect(
      loadManifest(runnerDir({ ...base, env: { PADDOCK_RUNNER_MODE: 'a', OK_RUNNER_LEVEL: '2' } })).manifest.env,
    ).toEqual({ PADDOCK_RUNNER_MODE: 'a', OK_RUNNER_LEVEL: '2' });
    const error = hostError(() =>
      loadManifest(
        runnerDir({ ...base, env: { PATH: '/x', OK_RUNNER_FINE: '1', LD_PRELOAD: '/x.so', NODE_OPTIONS: '-r x' } }),
      ),
    );
    expect(error.message.match(/field env\.[A-Z_]+:/g)).toEqual([
      'field env.PATH:',
      'field env.LD_PRELOAD:',
      'field env.NODE_OPTIONS:',
    ]);
    expect(error.data).toMatchObject({ fields: ['env.PATH', 'env.LD_PRELOAD', 'env.NODE_OPTIONS'] });
  });

  it(
    'a NUL byte in an env value is refused naming the field (it could split the launch file into sandbox ' + 'options)',
    () => {
      const error = hostError(() =>
        loadManifest(runnerDir({ ...base, env: { PADDOCK_RUNNER_A: 'x\u0000--bind\u0000/root\u0000/root' } })),
      );
      expect(error.code).toBe('MANIFEST_INVALID');
      expect(error.message).toContain('env.PADDOCK_RUNNER_A');
      expect(error.message).toContain('NUL');
    },
  );

  it('every shipped runner and example still validates', () => {
    for (const parent of ['runners', 'examples']) {
      const root = join(REPO, parent);
      for (const name of readdirSync(root))
        if (existsSync(join(root, name, 'runner.json'))) expect(loadManifest(join(root, name)).manifest.id).toBe(name);
    }
  });

  it('an unknown runner name is RUNNER_NOT_FOUND', () => {
    expect(hostError(() => resolveRunner('no-such-runner')).code).toBe('RUNNER_NOT_FOUND');
  });

  it('a node entry must be a file inside the runner folder', async () => {
    const dir = runnerDir({ ...base, entry: { node: '../../etc/passwd' } });
    await expect(runnerCommand(loadManifest(dir), BUNDLES)).rejects.toThrow(/field entry\.node: no file/);
  });

  it('a command entry substitutes {runnerDir}; a .js node entry runs with this node', async () => {
    const dir = runnerDir(base);
    expect(await runnerCommand(loadManifest(dir), BUNDLES)).toEqual({ command: 'python3', args: [`${dir}/r.py`] });
    const js = runnerDir({ ...base, entry: { node: 'main.mjs' } }, { 'main.mjs': '' });
    expect(await runnerCommand(loadManifest(js), BUNDLES)).toEqual({
      command: process.execPath,
      args: [join(js, 'main.mjs')],
    });
  });
});

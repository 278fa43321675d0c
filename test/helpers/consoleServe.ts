// The server side of the console tests: a real `paddock serve --console` child on a private data folder, its
// configuration applied with the real `paddock apply`, tokens made with the real `paddock tokens create`.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { paddock } from './cli.js';
import { FIXTURE_RUNNERS } from './host.js';
import { startServe, type ServeChild } from './serve.js';

/** A console server and what the test needs around it. */
export interface ConsoleServer {
  url: string;
  home: string;
  server: ServeChild;
  /** Environment every `paddock` child of this test gets (the fixture runners' folder, …). */
  env: Record<string, string>;
  /** A new token of `role` for `tenant` (`paddock tokens create`). */
  token(tenant: string, role: string, name?: string): Promise<string>;
  /** `paddock apply -f` of `yaml` on the server's data folder. */
  apply(yaml: string): Promise<void>;
  /** Stop the server; resolves to its exit code. */
  stop(): Promise<number | undefined>;
}

/**
 * Start `paddock serve --console` on a fresh data folder after applying `yaml` (when given). The fixture runners
 * (test/fixtures/runners) are on the runner path; `env` adds to the children's environment.
 */
export async function startConsoleServer(
  options: {
    yaml?: string;
    env?: Record<string, string>;
    extra?: string[];
    /** Called with the data folder after the configuration is applied and before the server starts. */
    seed?: (home: string) => void;
  } = {},
): Promise<ConsoleServer> {
  const home = mkdtempSync(join(tmpdir(), 'paddock-console-'));
  const env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS, ...options.env };
  let n = 0;
  const apply = async (yaml: string) => {
    const file = join(home, `config-${n++}.yaml`);
    writeFileSync(file, `${yaml}\n`);
    const applied = await paddock(['apply', '-f', file], { dataDir: home, env });
    if (applied.exitCode !== 0) throw new Error(`paddock apply failed:\n${applied.stdout}${applied.stderr}`);
  };
  if (options.yaml) await apply(options.yaml);
  options.seed?.(home);
  // A browser makes many requests per page: the per-token rate must not be what a test measures.
  const server = await startServe(
    home,
    ['--console', '--rate', '1000', '--burst', '1000', ...(options.extra ?? [])],
    env,
  );
  return {
    url: server.url,
    home,
    server,
    env,
    async token(tenant, role, name) {
      const args = ['tokens', 'create', '--tenant', tenant, '--role', role, ...(name ? ['--name', name] : [])];
      const made = await paddock(args, { dataDir: home });
      if (made.exitCode !== 0) throw new Error(`paddock tokens create failed:\n${made.stderr}`);
      return made.stdout.trim();
    },
    apply,
    stop: () => server.stop(),
  };
}

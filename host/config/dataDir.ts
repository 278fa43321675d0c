import { resolve } from 'node:path';

/** The data folder: `--data-dir`, else `PADDOCK_HOME`, else `./.paddock` under the working directory. */
export function resolveDataDir(
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): string {
  return resolve(cwd, flag ?? env.PADDOCK_HOME ?? '.paddock');
}

import { resolve } from 'node:path';
import { HostError } from '../errors.js';

/**
 * The data folder: `--data-dir`, else `PADDOCK_HOME`, else `./.paddock` under the working directory. An empty
 * `PADDOCK_HOME` counts as unset (a shell's `PADDOCK_HOME=$UNSET_VAR` must not make the working directory the data
 * folder); an empty `--data-dir` is refused.
 */
export function resolveDataDir(
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): string {
  if (flag === '') throw new HostError('INVALID_INPUT', '--data-dir: the value is empty (give a folder)');
  return resolve(cwd, flag ?? (env.PADDOCK_HOME || '.paddock'));
}

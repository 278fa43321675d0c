/** A configuration the validator refused, as the 400 problem naming every bad field at once. */
import { HostError } from '../errors.js';
import type { ConfigProblem } from '../bindings/validateConfig.js';
import { ApiProblem } from './problems.js';

/**
 * The `invalid_request` problem of a `CONFIG_INVALID` error (every problem the validator found, each with its field
 * path inside the configuration, `prefix` first: `config.` when it came as the body's `config` object; a problem of
 * the whole document is at `root`, the body field that held it); other errors unchanged.
 */
export function configProblemOf(error: unknown, prefix: string, root: string): unknown {
  if (!(error instanceof HostError) || error.code !== 'CONFIG_INVALID') return error;
  const problems = (error.data.problems as ConfigProblem[] | undefined) ?? [
    { field: String(error.data.field ?? '(root)'), message: error.message },
  ];
  const errors = problems.map((p) => ({
    path: p.field === '(root)' ? root : `${prefix}${p.field}`,
    // A problem of the whole text names its source (`yaml (line 3): …`), which the path already says.
    message: p.field === '(root)' ? withoutSource(p.message, root) : p.message,
  }));
  const detail = errors.map((e) => `${e.path || '(root)'}: ${e.message}`).join('; ');
  return new ApiProblem(400, 'invalid_request', `the configuration is not valid: ${detail}`, { errors });
}

/** `message` without the source name it starts with (`yaml (line 3): x` → `(line 3): x`, `yaml: x` → `x`). */
function withoutSource(message: string, source: string): string {
  if (message.startsWith(`${source}: `)) return message.slice(source.length + 2);
  if (message.startsWith(`${source} (`)) return message.slice(source.length + 1);
  return message;
}

// The `paddock` bin as it was before the build (issue 12): the host's TypeScript sources through tsx on every call.
// bench/cli.ts runs it in the same run as the built bin, so the before/after figures share one machine state.
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

register({ tsconfig: fileURLToPath(new URL('../../tsconfig.json', import.meta.url)) });
await import('../../host/cli/entry.ts');

#!/usr/bin/env node
// The `paddock` command. The host runs from its TypeScript sources through tsx, with this
// package's tsconfig whatever the caller's working directory (decorators need it).
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });
await import('../host/cli/entry.ts');

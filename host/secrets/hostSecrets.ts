import { readFileSync } from 'node:fs';
import { SECRET_KEY } from '../bindings/inlineSecrets.js';
import type { Resources } from '../bindings/schema.js';
import type { Redactor } from './redactor.js';

type SecretRef = { env: string } | { file: string };

/** The value a secret reference points at now, if it can be read. */
export function readSecretRef(ref: SecretRef, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if ('env' in ref) return env[ref.env];
  try {
    return readFileSync(ref.file, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** Register the host's own secrets: environment variables named like credentials. */
export function registerEnvSecrets(redactor: Redactor, env: NodeJS.ProcessEnv = process.env): void {
  for (const [name, value] of Object.entries(env)) if (SECRET_KEY.test(name)) redactor.add(value);
}

/** Register every secret the configuration references (model keys, MCP server env). */
export function registerConfigSecrets(redactor: Redactor, resources: Resources, env: NodeJS.ProcessEnv = process.env): void {
  for (const model of resources.models) if (model.apiKey) redactor.add(readSecretRef(model.apiKey, env));
  for (const server of resources.mcpServers) for (const ref of [...Object.values(server.env), ...Object.values(server.headers)]) redactor.add(readSecretRef(ref, env));
  for (const kb of resources.knowledgeBases) if (kb.apiKey) redactor.add(readSecretRef(kb.apiKey, env));
}

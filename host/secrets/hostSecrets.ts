import { readFileSync } from 'node:fs';
import type { Redactor } from './redactor.js';

type SecretRef = { env: string } | { file: string };

/**
 * The secret-holding resources of a configuration, by kind. Structural on purpose: secrets/ sits
 * below bindings/ (docs/decisions.md, Issue 12 — habits), so it names the fields it reads instead
 * of importing the binding schema; `Resources` fits it.
 */
export interface SecretHolders {
  models: readonly { id: string; apiKey?: SecretRef | undefined }[];
  knowledgeBases: readonly { id: string; apiKey?: SecretRef | undefined }[];
  mcpServers: readonly { id: string; env: Record<string, SecretRef>; headers: Record<string, SecretRef> }[];
}

/** The value a secret reference points at now, if it can be read. */
export function readSecretRef(ref: SecretRef, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if ('env' in ref) return env[ref.env];
  try {
    return readFileSync(ref.file, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/**
 * Environment variable names that hold credentials, by their words (split at `_`, `-`, `.`):
 * the last word is KEY, APIKEY, TOKEN, SECRET, PASSWORD, PASSWD, PASS, PASSPHRASE, CREDENTIAL(S) or
 * AUTHORIZATION (`AWS_SECRET_ACCESS_KEY`, `MY_OPENAI_KEY`, `GITHUB_TOKEN`, `DB_PASS`), or a word
 * before the last is SECRET, PASSWORD, PASSWD, PASSPHRASE or APIKEY and the last word does not
 * name a place or a setting (`SECRET_KEY_BASE` is a credential, `PASSWORD_STORE_DIR` is not).
 * Whole words only: `KEYBOARD_LAYOUT`, `TOKENIZERS_PARALLELISM`, `PATH` and `PWD` are not.
 */
export const CREDENTIAL_ENV_NAME = new RegExp(
  '^(?:.*[_.-])?(?:KEY|APIKEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PASSPHRASE|CREDENTIALS?|AUTHORIZATION)$' +
    '|^(?:.*[_.-])?(?:SECRET|PASSWORD|PASSWD|PASSPHRASE|APIKEY)[_.-]' +
    '(?!(?:.*[_.-])?(?:DIR|FILE|PATH|SOCK|SOCKET|URL|HOST|PORT|USER|NAME|ID|TYPE|MODE|LENGTH|ENABLED|DISABLED)$)',
  'i',
);

/**
 * Register the host's own secrets: the values of environment variables named like credentials ({@link
 * CREDENTIAL_ENV_NAME}).
 */
export function registerEnvSecrets(redactor: Redactor, env: NodeJS.ProcessEnv = process.env): void {
  for (const [name, value] of Object.entries(env)) if (CREDENTIAL_ENV_NAME.test(name)) redactor.add(value);
}

/** Register every secret the configuration references (model keys, MCP server env). */
export function registerConfigSecrets(
  redactor: Redactor,
  resources: SecretHolders,
  env: NodeJS.ProcessEnv = process.env,
): void {
  for (const model of resources.models) if (model.apiKey) redactor.add(readSecretRef(model.apiKey, env));
  for (const server of resources.mcpServers)
    for (const ref of [...Object.values(server.env), ...Object.values(server.headers)])
      redactor.add(readSecretRef(ref, env));
  for (const kb of resources.knowledgeBases) if (kb.apiKey) redactor.add(readSecretRef(kb.apiKey, env));
}

/** A secret reference of the configuration that cannot be read on this host now. */
export interface MissingSecretRef {
  /** `model <id>`, `knowledgeBase <id>` or `mcpServer <id>`. */
  resource: string;
  /** The field holding the reference: `apiKey`, `env.<NAME>`, `headers.<Name>`. */
  field: string;
  /** Why: `environment variable X is not set` / `file F is not readable`. */
  problem: string;
}

/**
 * Every secret reference of `resources` that does not resolve in `env` / the filesystem now: a
 * run using it would fail. Reported by `apply` (a warning: the host that runs may have another
 * environment), `explain` and `doctor`.
 */
export function missingSecretRefs(resources: SecretHolders, env: NodeJS.ProcessEnv = process.env): MissingSecretRef[] {
  const missing: MissingSecretRef[] = [];
  const check = (resource: string, field: string, ref: SecretRef) => {
    if (readSecretRef(ref, env) !== undefined) return;
    missing.push({
      resource,
      field,
      problem: 'env' in ref ? `environment variable ${ref.env} is not set` : `file ${ref.file} is not readable`,
    });
  };
  for (const m of resources.models) if (m.apiKey) check(`model ${m.id}`, 'apiKey', m.apiKey);
  for (const k of resources.knowledgeBases) if (k.apiKey) check(`knowledgeBase ${k.id}`, 'apiKey', k.apiKey);
  for (const s of resources.mcpServers) {
    for (const [name, ref] of Object.entries(s.env)) check(`mcpServer ${s.id}`, `env.${name}`, ref);
    for (const [name, ref] of Object.entries(s.headers)) check(`mcpServer ${s.id}`, `headers.${name}`, ref);
  }
  return missing;
}

/** One line for a missing reference. */
export function describeMissingRef(m: MissingSecretRef): string {
  return `${m.resource} ${m.field}: ${m.problem}; runs that use it fail until it resolves`;
}

import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomUUID,
  type KeyObject,
} from 'node:crypto';
import { chmodSync, existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The audit signing key: private half in the host only, public half for verifiers. */
export interface AuditKey {
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** First 16 hex digits of SHA-256 over the SPKI DER of the public key. */
  keyId: string;
  created: boolean;
}

/** Paths of the key files under a data folder. */
export function auditKeyPaths(dataDir: string): { privatePath: string; publicPath: string } {
  const dir = join(dataDir, 'keys');
  return { privatePath: join(dir, 'audit-ed25519.pem'), publicPath: join(dir, 'audit-ed25519.pub.pem') };
}

/** Key id of a public key. */
export function keyIdOf(publicKey: KeyObject): string {
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex')
    .slice(0, 16);
}

/** A public key as an `audit.key_created` record carries it: SPKI DER, base64. */
export function spkiBase64(publicKey: KeyObject): string {
  return publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
}

/** Load the audit key, generating it (mode 0600) on first start. */
export function loadOrCreateAuditKey(dataDir: string): AuditKey {
  const { privatePath } = auditKeyPaths(dataDir);
  return existsSync(privatePath) ? loadAuditKey(privatePath) : createAuditKey(dataDir);
}

/** The key in a private key file. */
function loadAuditKey(privatePath: string): AuditKey {
  const privateKey = createPrivateKey(readFileSync(privatePath));
  const publicKey = createPublicKey(privateKey);
  return { privateKey, publicKey, keyId: keyIdOf(publicKey), created: false };
}

/**
 * Generate the data folder's key, unless another process of the folder made one first: then that one, as a loaded
 * key. The private half is written whole under a name of this process's own and linked into place, so it appears
 * complete or not at all, and once: of processes starting together on a new folder, one key wins and every one of
 * them signs with it.
 */
export function createAuditKey(dataDir: string): AuditKey {
  const { privatePath, publicPath } = auditKeyPaths(dataDir);
  mkdirSync(join(dataDir, 'keys'), { recursive: true, mode: 0o700 });
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const draft = `${privatePath}.${randomUUID()}.tmp`;
  writeFileSync(draft, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
  try {
    chmodSync(draft, 0o600);
    linkSync(draft, privatePath);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return loadAuditKey(privatePath);
    throw error;
  } finally {
    rmSync(draft, { force: true });
  }
  writeFileSync(publicPath, publicKey.export({ type: 'spki', format: 'pem' }), { mode: 0o644 });
  return { privateKey, publicKey, keyId: keyIdOf(publicKey), created: true };
}

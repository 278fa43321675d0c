import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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
  const { privatePath, publicPath } = auditKeyPaths(dataDir);
  if (existsSync(privatePath)) {
    const privateKey = createPrivateKey(readFileSync(privatePath));
    const publicKey = createPublicKey(privateKey);
    return { privateKey, publicKey, keyId: keyIdOf(publicKey), created: false };
  }
  mkdirSync(join(dataDir, 'keys'), { recursive: true, mode: 0o700 });
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  writeFileSync(privatePath, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
  chmodSync(privatePath, 0o600);
  writeFileSync(publicPath, publicKey.export({ type: 'spki', format: 'pem' }), { mode: 0o644 });
  return { privateKey, publicKey, keyId: keyIdOf(publicKey), created: true };
}

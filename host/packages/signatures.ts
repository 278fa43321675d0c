/** Registry signatures of an installed package, checked with npm's own `npm audit signatures`. */
import { execFile } from 'node:child_process';
import { HostError } from '../errors.js';

/** npm's verdict, as recorded with the package: `verified`, `unsigned`, or `unverifiable: <why>`. */
export type SignatureVerdict = string;

/** How long npm may take (it fetches the registry's keys; a registry that does not answer must not hang install). */
const AUDIT_TIMEOUT_MS = 60_000;

/**
 * Read npm's answer to `npm audit signatures --json` for package `name`: exit 0 → `verified`; the package among
 * `invalid` → refused (a signature that does not match is a forged or corrupted tarball); among `missing` →
 * `unsigned` (the registry signs, this package is not signed); anything else (no keys, no network) →
 * `unverifiable: <npm's first line>`, recorded and shown, not refused: npm could not tell.
 */
export function signatureVerdict(exitCode: number, stdout: string, stderr: string, name: string): SignatureVerdict {
  if (exitCode === 0) return 'verified';
  let report: { invalid?: { name?: string }[]; missing?: { name?: string }[] } | undefined;
  try {
    report = JSON.parse(stdout) as typeof report;
  } catch {
    report = undefined;
  }
  const named = (list: { name?: string }[] | undefined) => Array.isArray(list) && list.some((p) => p?.name === name);
  if (named(report?.invalid))
    throw new HostError('PACKAGE_REFUSED', `npm found an invalid registry signature on ${name}: refused`, {
      reason: 'signature_invalid',
    });
  if (named(report?.missing)) return 'unsigned';
  const why = (stderr.trim() || stdout.trim() || `npm exited with ${exitCode}`).split('\n').find((l) => l.trim())!;
  return `unverifiable: ${why.replace(/^npm (error|ERR!) /, '').slice(0, 200)}`;
}

/** Check the registry signatures of the packages installed in npm prefix `dir` (`name` is the runner's package). */
export function checkSignatures(dir: string, name: string, npm = 'npm'): Promise<SignatureVerdict> {
  return new Promise((done, fail) => {
    execFile(
      npm,
      ['audit', 'signatures', '--json', '--fetch-retries=0', '--fetch-timeout=15000', '--no-update-notifier'],
      { cwd: dir, timeout: AUDIT_TIMEOUT_MS, maxBuffer: 8 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        try {
          done(signatureVerdict(code, stdout, error?.killed ? `timed out after ${AUDIT_TIMEOUT_MS} ms` : stderr, name));
        } catch (refusal) {
          fail(refusal as Error);
        }
      },
    );
  });
}

// npm's answer to `npm audit signatures --json`, read (host/packages/signatures.ts). The real command needs the
// registry's keys and sigstore, which this machine cannot reach: the shapes below are npm's documented JSON report.
import { describe, expect, it } from 'vitest';
import { HostError } from '../../../host/errors.js';
import { signatureVerdict } from '../../../host/packages/signatures.js';

describe('signatureVerdict', () => {
  it('exit 0 is verified', () => {
    expect(signatureVerdict(0, '{"invalid":[],"missing":[]}', '', 'paddock-runner-x')).toBe('verified');
  });
  it('the package among the invalid ones is refused', () => {
    const report = JSON.stringify({ invalid: [{ name: 'paddock-runner-x', version: '1.0.0' }], missing: [] });
    const error = (() => {
      try {
        signatureVerdict(1, report, '', 'paddock-runner-x');
      } catch (e) {
        return e as HostError;
      }
      throw new Error('not refused');
    })();
    expect(error).toBeInstanceOf(HostError);
    expect(error.data).toMatchObject({ reason: 'signature_invalid' });
  });
  it('the package among the missing ones is unsigned; another package invalid is not a refusal of this one', () => {
    const report = JSON.stringify({ invalid: [{ name: 'other' }], missing: [{ name: 'paddock-runner-x' }] });
    expect(signatureVerdict(1, report, '', 'paddock-runner-x')).toBe('unsigned');
  });
  it('npm that could not tell (no keys, no network, no JSON) is unverifiable, with its first words', () => {
    expect(signatureVerdict(1, '', 'npm error code ENOTFOUND\nnpm error more', 'paddock-runner-x')).toBe(
      'unverifiable: code ENOTFOUND',
    );
    expect(signatureVerdict(1, 'not json', '', 'x')).toBe('unverifiable: not json');
  });
});

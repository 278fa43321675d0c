import { createHash, createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { auditKeyPaths } from '../../../host/audit/auditKey.js';
import { verifyAudit } from '../../../host/audit/verify.js';
import { auditStorageOf } from '../../../host/state/auditReads.js';
import { tempStore } from '../../helpers/store.js';

// Any code unit, lone surrogates and control characters included: what JSON from a runner can carry.
const text = fc.string({ unit: 'binary', maxLength: 30 });

describe('the text a stored row hashes to (the verifier reads it from the storage)', () => {
  it('is exactly what the log hashed, for random records, so an intact row never needs the slow path', () => {
    const { store, dataDir } = tempStore();
    const entries = fc.sample(
      fc.record({
        type: text,
        actor: text,
        sessionId: fc.option(text, { nil: null }),
        runId: fc.option(text, { nil: null }),
        data: fc.jsonValue({ maxDepth: 3 }),
      }),
      { numRuns: 1500, seed: 16 },
    );
    store.transaction(() => {
      for (const entry of entries) store.audit.append(entry);
    });
    const storage = auditStorageOf(store);
    let rows = 0;
    for (const page of storage.pagesToVerify())
      for (const [seq, hashed, hash] of page) {
        rows += 1;
        const digest = hashed === null ? null : createHash('sha256').update(hashed).digest('hex');
        if (digest !== hash) expect.fail(`row ${seq}: ${JSON.stringify(hashed)} does not hash to the stored hash`);
      }
    expect(rows).toBeGreaterThanOrEqual(entries.length);
    const key = createPublicKey(readFileSync(auditKeyPaths(dataDir).publicPath));
    expect(verifyAudit(storage, key)).toMatchObject({ ok: true });
    store.close();
  });

  it('keeps a record naming lone surrogates verifiable: text columns as U+FFFD, data escaped as JSON', () => {
    const { store, dataDir } = tempStore();
    store.transaction(() => {
      store.audit.append({ type: 't\ud800', actor: 'runner:\udc00', runId: '\ud83d', data: { 'k\ud800': 'a\udfffb' } });
    });
    const [record] = store.audit.records().slice(-1);
    expect(record).toMatchObject({ type: 't\ufffd', actor: 'runner:\ufffd', runId: '\ufffd' });
    expect(record!.data).toEqual({ 'k\ud800': 'a\udfffb' });
    const key = createPublicKey(readFileSync(auditKeyPaths(dataDir).publicPath));
    expect(verifyAudit(auditStorageOf(store), key)).toMatchObject({ ok: true });
    store.close();
  });
});

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store } from '../../host/state/store.js';

/** A store in a fresh temporary data folder (a real SQLite file). */
export function tempStore(): { store: Store; dataDir: string } {
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-state-'));
  return { store: Store.open({ dataDir }), dataDir };
}

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Files under `dir` (recursively) whose bytes contain `needle` as is or base64-encoded. */
export function filesContaining(dir: string, needle: string): string[] {
  const forms = [Buffer.from(needle), Buffer.from(Buffer.from(needle).toString('base64'))];
  return (readdirSync(dir, { recursive: true }) as string[]).filter((file) => {
    const path = join(dir, file);
    try {
      if (!statSync(path).isFile()) return false;
      const bytes = readFileSync(path);
      return forms.some((f) => bytes.includes(f));
    } catch {
      return false; // removed meanwhile (a WAL index, a workspace being cleaned)
    }
  });
}

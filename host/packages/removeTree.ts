import { chmodSync, lstatSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Remove a package tree, sealed (read-only folders, whose entries cannot be unlinked) or not: folders made writable
 * first, deepest last; links are never followed. A missing tree is nothing to do.
 */
export function removeSealedTree(root: string): void {
  let st;
  try {
    st = lstatSync(root);
  } catch {
    return;
  }
  if (st.isDirectory()) {
    chmodSync(root, 0o700);
    for (const name of readdirSync(root)) {
      const child = join(root, name);
      if (lstatSync(child).isDirectory()) removeSealedTree(child);
    }
  }
  rmSync(root, { recursive: true, force: true });
}

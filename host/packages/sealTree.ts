import { chmodSync } from 'node:fs';
import { join, posix } from 'node:path';
import { HostError } from '../errors.js';
import { readTree, type TreeListing } from './treeDigest.js';

/** The set-user-id, set-group-id and sticky bits: no package file or folder may carry them. */
const SPECIAL_BITS = 0o7000;

/**
 * What is wrong with a staged package tree, every problem at once: a link whose target leaves the tree (absolute, or
 * climbing above the root through `..`), and a set-id or sticky bit. (Special files and names that are not UTF-8
 * already fail reading the tree.) Links are judged by their text, never followed.
 */
export function treeProblems(listing: TreeListing): string[] {
  const problems: string[] = [];
  for (const e of listing.entries) {
    if ((e.fp.mode & SPECIAL_BITS) !== 0)
      problems.push(`${e.path}: has a set-id or sticky bit (mode ${(e.fp.mode & 0o7777).toString(8)})`);
    if (e.type === 'L') {
      const resolved = posix.normalize(posix.join(posix.dirname(e.path), e.target));
      if (posix.isAbsolute(e.target) || resolved === '..' || resolved.startsWith('../'))
        problems.push(`${e.path}: a link to ${JSON.stringify(e.target)}, outside the package`);
    }
  }
  return problems;
}

/**
 * Make a staged package read-only (files 0444, or 0555 when the owner could execute them; folders 0555) after
 * refusing it if {@link treeProblems} finds anything; answers its listing as sealed, the record every run's check
 * compares with.
 */
export function sealTree(root: string): TreeListing {
  const listing = readTree(root);
  const problems = treeProblems(listing);
  if (problems.length > 0)
    throw new HostError('INVALID_INPUT', `the package is refused: ${problems.join('; ')}`, { problems });
  // Deepest first, so that a folder is made read-only after what is inside it.
  for (const e of [...listing.entries].reverse()) {
    if (e.type === 'L') continue;
    chmodSync(join(root, e.path), e.type === 'D' || e.exec ? 0o555 : 0o444);
  }
  chmodSync(root, 0o555);
  // Read again: chmod moved every ctime, and the record must hold the fingerprints as they are now.
  const sealed = readTree(root);
  if (sealed.digest !== listing.digest) throw new HostError('INVALID_INPUT', 'the package changed while it was sealed');
  return sealed;
}

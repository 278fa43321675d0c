// Package trees for the runner-package tests: fresh folders under the temp dir, removed after each test.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import type { TreeListing } from '../../host/packages/treeDigest.js';
import { RACY_MS } from '../../host/util/racyStat.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh empty folder, removed after the test. */
export function emptyFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-tree-'));
  made.push(dir);
  return dir;
}

/** A small package tree in a fresh folder: a manifest, a script, a nested file and a link. */
export function makeTree(): string {
  const root = emptyFolder();
  writeFileSync(join(root, 'runner.json'), '{"id":"t"}');
  writeFileSync(join(root, 'run.sh'), '#!/bin/sh\necho hi\n');
  chmodSync(join(root, 'run.sh'), 0o755);
  mkdirSync(join(root, 'lib', 'deep'), { recursive: true });
  writeFileSync(join(root, 'lib', 'deep', 'a.js'), 'export const a = 1;\n');
  symlinkSync('deep/a.js', join(root, 'lib', 'a.js'));
  return root;
}

/**
 * `listing` as if it had been recorded long after its files last changed (a real install is checked minutes or days
 * later): its fingerprints then stand for the content, which a listing made in the same second as the files is not.
 */
export const recordedLater = (listing: TreeListing): TreeListing => ({
  ...listing,
  recordedAtMs: listing.recordedAtMs + 10 * RACY_MS,
});

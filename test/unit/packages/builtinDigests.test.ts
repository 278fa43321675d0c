// The built-in runners checked against the build's record (docs/runner-packages.md §3): dist/runner-digests.json is
// what the build saw, and a built-in runner folder changed since (an edited byte, an added file) is refused.
import { appendFileSync, cpSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  BUILTIN_DIGESTS_FILE,
  builtinDigestsOf,
  BuiltinVerifier,
  verifyBuiltinRunner,
} from '../../../host/packages/builtinDigests.js';
import { BUILTIN_RUNNERS_DIR } from '../../../host/plugins/resolveRunner.js';
import { RACY_MS } from '../../../host/util/racyStat.js';
import { emptyFolder } from '../../helpers/packageTree.js';

afterEach(() => void vi.useRealTimers());

/** A copy of the built-in runners and the record of that copy, as the build makes it. */
function recordedCopy(): { runners: string; digests: string } {
  const base = emptyFolder();
  const runners = join(base, 'runners');
  cpSync(BUILTIN_RUNNERS_DIR, runners, { recursive: true });
  const digests = join(base, 'runner-digests.json');
  writeFileSync(digests, JSON.stringify(builtinDigestsOf(runners)));
  return { runners, digests };
}

/**
 * Checks made long after the files were written (as a host checks an install): the fingerprints a check sees then
 * stand for the content (racy rule, host/util/racyStat.ts), so a second check is by fingerprint alone.
 */
function checkLater(): void {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(Date.now() + 10 * RACY_MS);
}

/** Change one byte of a file in place, same size, and put its mtime back (only ctime tells). */
function editOneByte(file: string): void {
  const { atime, mtime } = statSync(file);
  const bytes = readFileSync(file);
  bytes[10] = bytes[10] === 0x20 ? 0x21 : 0x20;
  writeFileSync(file, bytes);
  utimesSync(file, atime, mtime);
}

describe('the build record of the built-in runners', () => {
  it('is what the folders hold now, and every built-in runner passes its check', () => {
    expect(JSON.parse(readFileSync(BUILTIN_DIGESTS_FILE, 'utf8'))).toEqual(builtinDigestsOf(BUILTIN_RUNNERS_DIR));
    for (const id of ['acp', 'claude-code', 'codex', 'echo', 'local-agent'])
      expect(verifyBuiltinRunner(id), id).toMatchObject({ runner: id, ok: true, changed: [] });
  });

  it('records each folder by name: id, digest and every entry without a machine fingerprint', () => {
    const { echo } = builtinDigestsOf(BUILTIN_RUNNERS_DIR).runners;
    expect(echo!.id).toBe('echo');
    expect(echo!.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(echo!.entries.map((e) => e.path)).toEqual(['index.ts', 'package.json', 'runner.json', 'runner.ts']);
    expect(echo!.entries.every((e) => !('fp' in e))).toBe(true);
  });
});

describe('BuiltinVerifier', () => {
  it('passes an untouched copy: every file hashed at the first check of a process, none after', () => {
    const { runners, digests } = recordedCopy();
    checkLater();
    const verifier = new BuiltinVerifier(runners, digests);
    expect(verifier.verify('echo')).toEqual({
      runner: 'echo',
      ok: true,
      expected: builtinDigestsOf(runners).runners.echo!.digest,
      changed: [],
      rehashed: 4,
    });
    expect(verifier.verify('echo')).toMatchObject({ ok: true, rehashed: 0 });
    expect(verifier.verify(join(runners, 'echo'))).toMatchObject({ runner: 'echo', ok: true, rehashed: 0 });
  });

  it('refuses a copy with one byte edited (mtime put back), and keeps refusing it', () => {
    const { runners, digests } = recordedCopy();
    checkLater();
    const verifier = new BuiltinVerifier(runners, digests);
    expect(verifier.verify('claude-code').ok).toBe(true);
    editOneByte(join(runners, 'claude-code', 'permission.ts'));
    const refused = verifier.verify('claude-code');
    expect(refused).toMatchObject({ ok: false, changed: ['permission.ts'], rehashed: 1 });
    expect(refused.problem).toBe('changed since the build: permission.ts');
    expect(verifier.verify('claude-code')).toMatchObject({ ok: false, changed: ['permission.ts'] });
    // The other runners of the same copy still pass.
    expect(verifier.verify('codex').ok).toBe(true);
  });

  it("refuses a byte edited before the process's first check (nothing of the disk is trusted at first)", () => {
    const { runners, digests } = recordedCopy();
    editOneByte(join(runners, 'echo', 'runner.ts'));
    checkLater();
    expect(new BuiltinVerifier(runners, digests).verify('echo')).toMatchObject({ ok: false, changed: ['runner.ts'] });
  });

  it('refuses an added, a grown and a removed file; a touch alone is no change', () => {
    const { runners, digests } = recordedCopy();
    checkLater();
    const verifier = new BuiltinVerifier(runners, digests);
    expect(verifier.verify('echo')).toMatchObject({ ok: true, rehashed: 4 });
    const now = new Date();
    utimesSync(join(runners, 'echo', 'runner.ts'), now, now);
    expect(verifier.verify('echo')).toMatchObject({ ok: true, rehashed: 1 });
    expect(verifier.verify('echo')).toMatchObject({ ok: true, rehashed: 0 });
    writeFileSync(join(runners, 'echo', 'extra.js'), 'process.exit(0)\n');
    expect(verifier.verify('echo')).toMatchObject({ ok: false, changed: ['extra.js'] });
    appendFileSync(join(runners, 'local-agent', 'runner.ts'), '\n');
    expect(verifier.verify('local-agent')).toMatchObject({ ok: false, changed: ['runner.ts'] });
    rmSync(join(runners, 'codex', 'codex.ts'));
    expect(verifier.verify('codex')).toMatchObject({ ok: false, changed: ['codex.ts'] });
  });

  it('re-hashes every file once the full-check period has passed', () => {
    const { runners, digests } = recordedCopy();
    checkLater();
    let now = 0;
    const verifier = new BuiltinVerifier(runners, digests, 60_000, () => now);
    expect(verifier.verify('echo').rehashed).toBe(4);
    now = 59_999;
    expect(verifier.verify('echo').rehashed).toBe(0);
    now = 60_000;
    expect(verifier.verify('echo').rehashed).toBe(4);
    expect(verifier.verify('echo', { full: true }).rehashed).toBe(4);
  });

  it('refuses a runner the build did not record, and every runner when the record is missing or malformed', () => {
    const { runners, digests } = recordedCopy();
    expect(new BuiltinVerifier(runners, digests).verify('nope')).toMatchObject({
      ok: false,
      expected: null,
      problem: 'the build recorded no built-in runner "nope"',
    });
    const missing = join(emptyFolder(), 'runner-digests.json');
    expect(new BuiltinVerifier(runners, missing).verify('echo')).toMatchObject({
      ok: false,
      problem: `${missing} is missing or malformed`,
    });
    writeFileSync(missing, JSON.stringify({ format: 1, runners: { echo: { id: 'echo', digest: 'x' } } }));
    expect(new BuiltinVerifier(runners, missing).verify('echo').ok).toBe(false);
  });

  it('takes a folder path only inside the built-in runners folder', () => {
    const { runners, digests } = recordedCopy();
    const verifier = new BuiltinVerifier(runners, digests);
    expect(() => verifier.verify(emptyFolder())).toThrow(/is not a built-in runner folder/);
    expect(() => verifier.verify(join(runners, 'echo', '..', '..', 'runners2', 'echo'))).toThrow(
      /is not a built-in runner folder/,
    );
  });
});

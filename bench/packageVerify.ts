// Issue 18's per-run package check (docs/runner-packages.md, "Verified at every run"): what `checkTree` costs on a
// runner of 1,000 files before each run, against the same run's baselines — spawning /bin/true and a bare Node start
// (the least a runner's start costs) — and what the install-time digest and the scheduled full re-hash cost.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageDir } from '../host/packages/installedRunners.js';
import { readTree } from '../host/packages/treeDigest.js';
import { verifyInstalledPackage } from '../host/packages/verifyInstalled.js';
import { insertRunnerPackage } from '../host/state/runnerPackages.js';
import { Store } from '../host/state/store.js';
import { checkTree } from '../host/packages/verifyTree.js';
import { RACY_MS } from '../host/util/racyStat.js';
import { fmt, summarize } from './stats.js';

const FOLDERS = 40;
const FILES_PER_FOLDER = 25;

/** A node_modules-like tree: 40 folders of 25 files of 200 B – 20 KiB (seeded sizes), in `root` or a new folder. */
function makeBigTree(root = mkdtempSync(join(tmpdir(), 'paddock-bench-pkg-'))): string {
  mkdirSync(root, { recursive: true });
  let seed = 18;
  const size = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), 200 + (seed % 20_000));
  for (let d = 0; d < FOLDERS; d++) {
    mkdirSync(join(root, `mod${d}`, 'lib'), { recursive: true });
    for (let f = 0; f < FILES_PER_FOLDER; f++)
      writeFileSync(join(root, `mod${d}`, 'lib', `file${f}.js`), Buffer.alloc(size(), 97 + (f % 26)));
  }
  return root;
}

/** A clock in milliseconds: wall-clock, or this process's CPU (user + system), the cost whatever shares the machine. */
const wall = () => performance.now();
const cpu = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};

/** Milliseconds of each of `n` calls of `fn` on `clock`. */
function times(n: number, fn: () => void, clock: () => number = wall): number[] {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = clock();
    fn();
    out.push(clock() - t0);
  }
  return out;
}

/** Runs the bench and prints it; returns the figures (ms). */
export async function packageVerifyBench() {
  const root = makeBigTree();
  try {
    const load = loadavg()[0]!;
    const install = summarize(times(5, () => readTree(root)));
    // As a run days after the install sees it: the files' ctimes long before the recording (RACY_MS, racyStat.ts).
    // Recorded in the same second as the files were written, every fingerprint would be compared by content.
    const fresh = readTree(root);
    const listing = { ...fresh, recordedAtMs: fresh.recordedAtMs + 10 * RACY_MS };
    const perRun = summarize(times(300, () => checkTree(root, listing)));
    const perRunCpu = summarize(times(300, () => checkTree(root, listing), cpu));
    const full = summarize(times(5, () => checkTree(root, listing, { full: true })));
    const racy = summarize(times(20, () => checkTree(root, fresh)));
    // One file touched: its fingerprint moved, so the check hashes that one file.
    utimesSync(join(root, 'mod3', 'lib', 'file7.js'), new Date(), new Date());
    const touched = summarize(times(50, () => checkTree(root, listing)));
    const wired = wiredCheck();
    const spawnTrue = summarize(times(20, () => spawnSync('/bin/true')));
    const nodeStart = summarize(times(10, () => spawnSync(process.execPath, ['-e', '0'])));
    const entries = listing.entries.length;
    console.log(`\n## Runner package check (bench/packageVerify.ts, issue 18) — load ${fmt(load, 2)}`);
    console.log(`tree: ${entries} entries (${FOLDERS * FILES_PER_FOLDER} files), median of each`);
    console.log(`per-run check (untouched):   ${fmt(perRun.median, 3)} ms (p99 ${fmt(perRun.p99, 3)})`);
    console.log(`  its CPU time:              ${fmt(perRunCpu.median, 3)} ms`);
    console.log(`per-run check (1 touched):   ${fmt(touched.median, 3)} ms`);
    console.log(`as a run makes it (store):   ${fmt(wired.median, 3)} ms (p99 ${fmt(wired.p99, 3)}; row read + check)`);
    console.log(`per-run check (just written):${fmt(racy.median, 2)} ms (every fingerprint racy: content compared)`);
    console.log(`full re-hash (scheduled):    ${fmt(full.median, 2)} ms`);
    console.log(`install digest (readTree):   ${fmt(install.median, 2)} ms`);
    console.log(`baseline spawn /bin/true:    ${fmt(spawnTrue.median, 2)} ms`);
    console.log(`baseline node -e 0:          ${fmt(nodeStart.median, 2)} ms`);
    console.log(`per-run check / node start:  ${fmt(perRun.median / nodeStart.median, 3)}×`);
    return {
      load,
      entries,
      perRunMs: perRun,
      perRunCpuMs: perRunCpu.median,
      touchedMs: touched.median,
      wiredMs: wired,
      fullMs: full.median,
      racyMs: racy.median,
      installMs: install.median,
      spawnTrueMs: spawnTrue.median,
      nodeStartMs: nodeStart.median,
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/**
 * The check as planning makes it before each run (host/packages/verifyInstalled.ts): the version's state read from a
 * real store, the parsed listing kept while its revision is current, then the fingerprints compared.
 */
function wiredCheck() {
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-bench-pkgstore-'));
  const store = Store.open({ dataDir });
  try {
    const dir = makeBigTree(packageDir(dataDir, 'bench', '1.0.0'));
    const read = readTree(dir);
    // Recorded long after the files settled, as a run days after the install sees it.
    const listing = { ...read, recordedAtMs: read.recordedAtMs + 10 * RACY_MS };
    store.transaction(() =>
      insertRunnerPackage(store, {
        runnerId: 'bench',
        version: '1.0.0',
        source: 'folder',
        spec: dir,
        packageName: 'paddock-runner-bench',
        integrity: null,
        digest: listing.digest,
        signatures: 'not applicable (folder)',
        permissions: {},
        skippedScripts: [],
        nativeBuild: false,
        listing: JSON.stringify(listing),
        installedBy: 'bench',
        installedAt: new Date().toISOString(),
      }),
    );
    const check = () => {
      if (!verifyInstalledPackage(store, dataDir, 'bench', '1.0.0').ok) throw new Error('the bench tree changed');
    };
    check(); // the first check parses the stored listing (once per process and revision)
    return summarize(times(300, check));
  } finally {
    store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

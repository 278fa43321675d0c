/** The versions of installed runner packages: which strings are versions, and which of two is newer. */

const NUMBER = String.raw`(0|[1-9]\d{0,15})`;
const DOTTED = String.raw`[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*`;
/** major.minor.patch, an optional `-prerelease` (captured) and an optional `+build`. */
const SEMVER = new RegExp(String.raw`^${NUMBER}\.${NUMBER}\.${NUMBER}(?:-(${DOTTED}))?(?:\+${DOTTED})?$`);

/**
 * Whether `v` is a semantic version (`1.2.3`, `1.2.3-rc.1`, `1.2.3+build`) of at most 64 characters: what npm
 * publishes, and safe as part of a folder name (`<id>@<version>`: no slash, no `..`, no control character).
 */
export function isPackageVersion(v: string): boolean {
  return v.length <= 64 && SEMVER.test(v);
}

/** Compare two prerelease identifiers as semver orders them: numbers by value, below words; words by bytes. */
function compareIdentifiers(a: string, b: string): number {
  const an = /^\d+$/.test(a);
  const bn = /^\d+$/.test(b);
  if (an && bn) return Number(a) - Number(b);
  if (an !== bn) return an ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Semantic version order of two {@link isPackageVersion} strings (negative: `a` is older): major, minor, patch by
 * value; a prerelease before its release; build metadata ignored.
 */
export function compareVersions(a: string, b: string): number {
  const pa = SEMVER.exec(a);
  const pb = SEMVER.exec(b);
  if (!pa || !pb) throw new Error(`not a version: ${JSON.stringify(pa ? b : a)}`);
  for (let i = 1; i <= 3; i++) {
    const d = Number(pa[i]) - Number(pb[i]);
    if (d !== 0) return d;
  }
  const ra = pa[4];
  const rb = pb[4];
  if (ra === undefined || rb === undefined) return ra === rb ? 0 : ra === undefined ? 1 : -1;
  const xa = ra.split('.');
  const xb = rb.split('.');
  for (let i = 0; i < Math.min(xa.length, xb.length); i++) {
    const d = compareIdentifiers(xa[i]!, xb[i]!);
    if (d !== 0) return d;
  }
  return xa.length - xb.length;
}

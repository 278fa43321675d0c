// Matching for rules (docs/approvals.md §2): path globs and domain patterns. No regular expressions are built from
// a pattern, so a binding's glob can never be a catastrophic-backtracking bomb: both matchers are O(pattern × text).

/**
 * Does the path glob match the path? `*` and `?` stay within a segment, a `**` segment crosses any number of
 * segments (zero included), everything else is literal (no braces, no classes). Case-sensitive, as Linux paths are;
 * a relative glob never matches an absolute path nor the reverse.
 */
export function globMatch(glob: string, path: string): boolean {
  // A relative glob names workspace paths only: `**` must not reach `/etc/passwd`, nor `/etc/**` a relative path.
  if (glob.startsWith('/') !== path.startsWith('/')) return false;
  const g = glob.split('/');
  const p = path.split('/');
  // reach[j]: the first i glob segments can match the first j path segments.
  let reach = new Array<boolean>(p.length + 1).fill(false);
  reach[0] = true;
  for (const seg of g) {
    const next = new Array<boolean>(p.length + 1).fill(false);
    if (seg === '**') {
      let any = false;
      for (let j = 0; j <= p.length; j++) {
        any ||= reach[j]!;
        next[j] = any;
      }
    } else {
      for (let j = 0; j < p.length; j++) if (reach[j] && segmentMatch(seg, p[j]!)) next[j + 1] = true;
    }
    reach = next;
  }
  return reach[p.length]!;
}

/** Wildcard match of one segment (`*` any run, `?` one character), iterative with one backtrack point. */
export function segmentMatch(pattern: string, text: string): boolean {
  const pat = [...pattern];
  const txt = [...text];
  let pi = 0;
  let ti = 0;
  let star = -1;
  let mark = 0;
  while (ti < txt.length) {
    if (pi < pat.length && (pat[pi] === '?' || (pat[pi] !== '*' && pat[pi] === txt[ti]))) {
      pi++;
      ti++;
    } else if (pi < pat.length && pat[pi] === '*') {
      star = pi++;
      mark = ti;
    } else if (star >= 0) {
      pi = star + 1;
      ti = ++mark;
    } else return false;
  }
  while (pi < pat.length && pat[pi] === '*') pi++;
  return pi === pat.length;
}

/** How specific a path glob is: its literal segments (`src/**` 1, `src/app/*.ts` 2, `src/a.ts` 2). */
export function specificity(glob: string): number {
  return glob.split('/').filter((s) => s !== '' && !s.includes('*') && !s.includes('?')).length;
}

/** Ports a destination written without one stands for (the egress proxy's web ports). */
const WEB_PORTS = new Set(['80', '443']);

/**
 * A destination split into its name and port: `host`, `host:port`, `[v6]`, `[v6]:port` (a bare IPv6 address has no
 * port). The port is undefined when none is written.
 */
export function splitHostPort(value: string): { name: string; port?: string } {
  const bracketed = /^\[([^\]]*)\](?::(\d{1,5}))?$/.exec(value);
  if (bracketed) return { name: bracketed[1]!, ...(bracketed[2] !== undefined ? { port: bracketed[2] } : {}) };
  const colon = value.lastIndexOf(':');
  if (colon > 0 && value.indexOf(':') === colon && /^\d{1,5}$/.test(value.slice(colon + 1)))
    return { name: value.slice(0, colon), port: value.slice(colon + 1) };
  return { name: value };
}

/**
 * A destination as compared: a lower-case name without the root's trailing dot, then `:port` unless the port is a
 * web port (80, 443), which a destination without a port stands for (`example.com:443` is `example.com`); an IPv6
 * address in brackets.
 */
export function normalDomain(host: string): string {
  const { name, port } = splitHostPort(host);
  const lower = name.toLowerCase();
  const bare = lower.endsWith('.') ? lower.slice(0, -1) : lower;
  const named = bare.includes(':') ? `[${bare}]` : bare;
  return port === undefined || WEB_PORTS.has(String(Number(port))) ? named : `${named}:${Number(port)}`;
}

/**
 * Does the domain pattern match the host? `*.example.com` matches any subdomain (`a.example.com`,
 * `a.b.example.com`), never the apex nor `evil-example.com`; anything else matches exactly. Case-insensitive. The
 * ports must be the same: a pattern without one names the web ports only (`example.com` never covers
 * `example.com:22`), `*.example.com:8443` only port 8443.
 */
export function domainMatch(pattern: string, host: string): boolean {
  const p = splitHostPort(normalDomain(pattern));
  const h = splitHostPort(normalDomain(host));
  if (p.port !== h.port) return false;
  if (p.name.startsWith('*.')) {
    const suffix = p.name.slice(1);
    return suffix.length > 1 && h.name.length > suffix.length && h.name.endsWith(suffix);
  }
  return p.name === h.name;
}

/** How specific a domain pattern is: an exact host beats any wildcard; longer wildcards beat shorter ones. */
export function domainSpecificity(pattern: string): number {
  const labels = normalDomain(pattern).split('.').length;
  return pattern.startsWith('*.') ? labels - 1 : 1000 + labels;
}

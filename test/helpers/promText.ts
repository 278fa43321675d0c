// A strict reader of the Prometheus text exposition format 0.0.4, for tests: it throws on any line that is not
// valid exposition, on a sample of an undeclared family, and on a histogram whose buckets are not cumulative.

/** One sample: metric name, labels, value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A parsed exposition: families by name (type, help) and every sample. */
export interface Exposition {
  families: Map<string, { type: string; help: string }>;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

/** A sample value as Prometheus reads it (Go's ParseFloat: `NaN`, `Inf` in any case; prom-client writes `Nan`). */
function parseValue(text: string, line: string): number {
  if (/^\+?inf(inity)?$/i.test(text)) return Infinity;
  if (/^-inf(inity)?$/i.test(text)) return -Infinity;
  if (/^nan$/i.test(text)) return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`bad value in: ${line}`);
  return Number(text);
}

/** Labels of `{…}`: returns them and where the block ended. */
function parseLabels(line: string, start: number): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  let i = start + 1;
  while (line[i] !== '}') {
    const eq = line.indexOf('=', i);
    const name = line.slice(i, eq);
    if (eq < 0 || !LABEL_NAME.test(name) || line[eq + 1] !== '"') throw new Error(`bad label in: ${line}`);
    if (name in labels) throw new Error(`repeated label ${name} in: ${line}`);
    let value = '';
    let j = eq + 2;
    for (; j < line.length && line[j] !== '"'; j++) {
      if (line[j] !== '\\') {
        value += line[j];
        continue;
      }
      const next = line[++j];
      if (next === 'n') value += '\n';
      else if (next === '\\' || next === '"') value += next;
      else throw new Error(`bad escape in: ${line}`);
    }
    if (j >= line.length) throw new Error(`unterminated label value in: ${line}`);
    labels[name] = value;
    i = j + 1;
    if (line[i] === ',') i++;
    else if (line[i] !== '}') throw new Error(`bad label separator in: ${line}`);
  }
  return { labels, end: i + 1 };
}

/** The family a sample belongs to (a histogram's `_bucket`, `_sum`, `_count` belong to it). */
function familyOf(name: string, families: Exposition['families']): string | undefined {
  if (families.has(name)) return name;
  const m = /^(.*)_(bucket|sum|count|created)$/.exec(name);
  return m && families.has(m[1]!) && ['histogram', 'summary'].includes(families.get(m[1]!)!.type) ? m[1] : undefined;
}

/** Parse exposition text, throwing on anything invalid. */
export function parseExposition(text: string): Exposition {
  const families: Exposition['families'] = new Map();
  const samples: Sample[] = [];
  const seen = new Set<string>();
  if (!text.endsWith('\n')) throw new Error('exposition must end with a newline');
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) continue; // a plain comment
      if (!NAME.test(m[2]!)) throw new Error(`bad metric name: ${line}`);
      const f = families.get(m[2]!) ?? { type: 'untyped', help: '' };
      if (m[1] === 'TYPE') {
        if (!TYPES.has(m[3]!)) throw new Error(`bad type: ${line}`);
        f.type = m[3]!;
      } else f.help = m[3]!;
      families.set(m[2]!, f);
      continue;
    }
    const brace = line.indexOf('{');
    const space = line.indexOf(' ');
    const nameEnd = brace >= 0 && brace < space ? brace : space;
    const name = line.slice(0, nameEnd);
    if (!NAME.test(name)) throw new Error(`bad sample name: ${line}`);
    const { labels, end } = nameEnd === brace ? parseLabels(line, brace) : { labels: {}, end: nameEnd };
    const rest = line.slice(end).trim().split(/\s+/);
    if (rest.length < 1 || rest.length > 2 || line[end] !== ' ') throw new Error(`bad sample: ${line}`);
    if (!familyOf(name, families)) throw new Error(`sample of an undeclared family: ${line}`);
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (seen.has(key)) throw new Error(`duplicate series: ${line}`);
    seen.add(key);
    samples.push({ name, labels, value: parseValue(rest[0]!, line) });
  }
  checkHistograms(families, samples);
  return { families, samples };
}

/** Buckets ascend by `le`, counts never decrease, the last is `+Inf` and equals `_count`. */
function checkHistograms(families: Exposition['families'], samples: Sample[]): void {
  for (const [name, f] of families) {
    if (f.type !== 'histogram') continue;
    const groups = new Map<string, Sample[]>();
    for (const s of samples.filter((x) => x.name === `${name}_bucket`)) {
      const { le, ...rest } = s.labels;
      if (le === undefined) throw new Error(`${name}_bucket without le`);
      const key = JSON.stringify(Object.entries(rest).sort());
      groups.set(key, [...(groups.get(key) ?? []), s]);
    }
    for (const [key, buckets] of groups) {
      const les = buckets.map((b) => parseValue(b.labels.le!, b.labels.le!));
      for (let i = 1; i < buckets.length; i++) {
        if (!(les[i]! > les[i - 1]!)) throw new Error(`${name}: buckets out of order`);
        if (buckets[i]!.value < buckets[i - 1]!.value) throw new Error(`${name}: buckets not cumulative`);
      }
      if (les.at(-1) !== Infinity) throw new Error(`${name}: no +Inf bucket`);
      const count = samples.find(
        (s) => s.name === `${name}_count` && JSON.stringify(Object.entries(s.labels).sort()) === key,
      );
      if (!count || count.value !== buckets.at(-1)!.value) throw new Error(`${name}: _count differs from +Inf`);
    }
  }
}

/** The value of the one sample of `name` whose labels include `labels` (0 when there is none). */
export function valueOf(e: Exposition, name: string, labels: Record<string, string> = {}): number {
  const found = e.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} series`);
  return found[0]?.value ?? 0;
}

/** How many series of `name` there are. */
export function seriesOf(e: Exposition, name: string): Sample[] {
  return e.samples.filter((s) => s.name === name);
}

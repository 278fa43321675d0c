// Command-line arguments of `npm run campaign <name> [--seed N] [--count N] [--nightly] [--key value…]`.

/** The parsed arguments; `count` is undefined when neither `--count` nor `--nightly` was given. */
export interface ParsedArgs {
  name: string | undefined;
  seed: number | undefined;
  count: number | undefined;
  nightly: boolean;
  flags: Record<string, string>;
}

/** Parses argv (without node and the script); throws on a malformed number. */
export function parseCampaignArgs(argv: readonly string[]): ParsedArgs {
  const out: ParsedArgs = { name: undefined, seed: undefined, count: undefined, nightly: false, flags: {} };
  const num = (flag: string, v: string | undefined) => {
    if (v === undefined || !/^\d+$/.test(v)) throw new Error(`${flag} needs a non-negative integer, got ${v}`);
    return Number(v);
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--seed') out.seed = num(a, argv[++i]);
    else if (a === '--count') out.count = num(a, argv[++i]);
    else if (a === '--nightly') out.nightly = true;
    else if (a.startsWith('--')) {
      const [key, inline] = a.slice(2).split('=', 2) as [string, string | undefined];
      out.flags[key] = inline ?? argv[++i] ?? '';
    } else if (out.name === undefined) out.name = a;
    else throw new Error(`unexpected argument ${a}`);
  }
  return out;
}

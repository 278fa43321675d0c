// The shape of a campaign module: test/campaigns/<name>.ts exports `campaign`, run by test/campaigns/run.ts.
import type { Report } from './report.js';

/** What the runner hands a campaign: its starting seed, how many cases, and any other `--key value` flags. */
export interface CampaignArgs {
  seed: number;
  count: number;
  flags: Readonly<Record<string, string>>;
  /**
   * True once the campaign should stop early (SIGINT/SIGTERM, or `--minutes` spent): it ends its current case and
   * returns, judging what it has. Optional so hand-made args (tests) need not give it.
   */
  stopped?: () => boolean;
}

/** A seeded, reproducible campaign: cases derived from `args.seed` (see lib/random.ts caseSeed). */
export interface Campaign {
  /** One line for `npm run campaign` without a name. */
  description: string;
  /** Cases when run on demand without `--count` (a short smoke). */
  smokeCount: number;
  /** Cases in the nightly job (.ci/nightly), the full size. */
  nightlyCount: number;
  /** Runs the cases, recording totals and violations in `report` (the runner prints it and sets the exit code). */
  run(args: CampaignArgs, report: Report): Promise<void>;
}

// `npm run campaign <name> [--seed N] [--count N] [--nightly] [--minutes M]`: runs test/campaigns/<name>.ts, prints its totals
// and every violation with its seed, exits 1 on any violation (2 on a usage error). Not part of `npm test`;
// .ci/nightly runs every campaign at full size.
import { readdirSync } from 'node:fs';
import { parseCampaignArgs } from './lib/args.js';
import type { Campaign } from './lib/campaign.js';
import { createReport } from './lib/report.js';

const here = new URL('./', import.meta.url);
const names = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts')
  .map((f) => f.slice(0, -3))
  .sort();

let args;
try {
  args = parseCampaignArgs(process.argv.slice(2));
} catch (error) {
  console.error((error as Error).message);
  process.exit(2);
}
if (!args.name || !names.includes(args.name)) {
  console.error('usage: npm run campaign <name> [--seed N] [--count N] [--nightly] [--minutes M]');
  for (const name of names) {
    const { campaign } = (await import(new URL(`${name}.ts`, here).href)) as { campaign: Campaign };
    console.error(`  ${name.padEnd(12)} ${campaign.description}`);
  }
  process.exit(2);
}
const { campaign } = (await import(new URL(`${args.name}.ts`, here).href)) as { campaign: Campaign };
// A fresh seed unless one is given, printed in the header so any run can be repeated.
const seed = args.seed ?? Math.floor(Math.random() * 2 ** 31);
const count = args.count ?? (args.nightly ? campaign.nightlyCount : campaign.smokeCount);
const report = createReport(args.name, seed);
report.total('count', count);
// Stop early on SIGINT/SIGTERM (a second one exits at once) or when `--minutes` are spent: the campaign ends its
// current case and the report still prints what was done.
let stopReason = '';
const stopOn = (signal: NodeJS.Signals) =>
  process.on(signal, () => {
    if (stopReason) process.exit(130);
    stopReason = signal;
  });
stopOn('SIGINT');
stopOn('SIGTERM');
const budgetMs = Number(args.flags.minutes ?? Infinity) * 60_000;
const startedAt = Date.now();
const stopped = () => {
  if (!stopReason && Date.now() - startedAt > budgetMs) stopReason = `${args.flags.minutes} minutes spent`;
  return stopReason !== '';
};
try {
  await campaign.run({ seed, count, flags: args.flags, stopped }, report);
  if (stopReason) report.total('stopped early', stopReason);
} catch (error) {
  // A campaign that throws has not checked what it was to check: that is a violation of its own.
  report.violation(seed, `campaign aborted: ${(error as Error).stack ?? String(error)}`);
}
process.exit(report.finish());

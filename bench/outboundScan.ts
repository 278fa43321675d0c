import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { redactOutbound } from '../host/gateway/outboundRequest.js';
import { decodeForScan } from '../host/sandbox/egressBody.js';
import { Redactor } from '../host/secrets/redactor.js';
import { fmt, summarize } from './stats.js';

/** Median milliseconds of `fn` over `rounds` runs, after two warm-up runs. */
function timeIt(fn: () => void, rounds: number): number {
  fn();
  fn();
  const samples: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const started = process.hrtime.bigint();
    fn();
    samples.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return summarize(samples).median;
}

/**
 * What the outbound scans of issue 14 cost (docs/approvals.md §6), each beside a baseline that does the same
 * unavoidable work without the scan, in the same process and rounds:
 * - a model request through the gateway (a conversation of 200 KB and 1 MB of text, as a harness's later turns are):
 *   `redactOutbound` vs a structured copy of the body (what the gateway did before: spread and re-serialise);
 * - a plain-HTTP body through the egress proxy (1 MiB of text, and gzip-compressed): `decodeForScan` + the redactor's
 *   check vs reading the bytes as text;
 * - a tunnel's bytes (16 KiB chunks of random bytes, as TLS is): `watchKnown` per chunk vs a Latin-1 decode per chunk.
 * The redactor knows 20 secrets (each in all its forms), as a host with a few providers and learnt values would.
 */
export async function outboundScanBench(rounds = 30) {
  const redactor = new Redactor();
  for (let i = 0; i < 20; i++) redactor.add(`sk-bench-${i}-${randomBytes(12).toString('hex')}`);
  const line = 'export function handler(req, res) { return res.json({ ok: true, items: [1, 2, 3] }); }\n';
  const conversation = (bytes: number) => ({
    model: 'claude',
    max_tokens: 1024,
    messages: Array.from({ length: Math.ceil(bytes / 4096) }, (_, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: [{ type: 'text', text: line.repeat(Math.ceil(4096 / line.length)).slice(0, 4096) }],
    })),
  });
  const results: Record<string, { baselineMs: number; scanMs: number; ratio: number; mbPerS: number }> = {};
  const record = (name: string, bytes: number, baseline: () => void, scan: () => void) => {
    const baselineMs = timeIt(baseline, rounds);
    const scanMs = timeIt(scan, rounds);
    results[name] = { baselineMs, scanMs, ratio: scanMs / baselineMs, mbPerS: bytes / 1e6 / (scanMs / 1e3) };
    console.log(
      `  ${name}: scan ${fmt(scanMs, 2)} ms vs baseline ${fmt(baselineMs, 2)} ms (×${fmt(scanMs / baselineMs)}), ` +
        `${fmt(bytes / 1e6 / (scanMs / 1e3), 0)} MB/s`,
    );
  };
  console.log('\n## Outbound scans (issue 14): median of %d rounds', rounds);
  for (const size of [200_000, 1_000_000]) {
    const body = conversation(size);
    const bytes = JSON.stringify(body).length;
    record(
      `model request ${Math.round(bytes / 1000)} KB`,
      bytes,
      () => void JSON.parse(JSON.stringify({ ...body, model: 'm' })),
      () => redactOutbound(redactor, { body, query: '?beta=true', clientHeaders: {} }, () => undefined),
    );
  }
  const text = Buffer.from(line.repeat(Math.ceil(1_048_576 / line.length)).slice(0, 1_048_576));
  record(
    'egress body 1 MiB',
    text.length,
    () => text.toString('utf8'),
    () => redactor.text((decodeForScan(text, undefined) as { text: string }).text),
  );
  const zipped = gzipSync(text);
  record(
    'egress body 1 MiB gzip',
    text.length,
    () => text.toString('utf8'),
    () => redactor.text((decodeForScan(zipped, 'gzip') as { text: string }).text),
  );
  const chunks = Array.from({ length: 64 }, () => randomBytes(16_384));
  record(
    'tunnel 1 MiB in 16 KiB chunks',
    64 * 16_384,
    () => {
      for (const chunk of chunks) chunk.toString('latin1');
    },
    () => {
      const seen = redactor.watchKnown();
      for (const chunk of chunks) seen(chunk.toString('latin1'));
    },
  );
  return results;
}

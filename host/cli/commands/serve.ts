import { isIP } from 'node:net';
import type { HostConfig } from '../../config/hostConfig.js';
import { TOKENS } from '../../di/tokens.js';
import { describeRecovery, openHost } from '../../start.js';
import { clip } from '../../util/clip.js';
import { UsageError } from '../spec.js';

type Out = (text: string) => void;

/** Where `paddock serve` listens unless told otherwise: loopback only. */
export const DEFAULT_LISTEN = '127.0.0.1:8420';

/** What `serve` does with the runs it holds when it is told to stop. */
export type OnStop = 'drain' | 'cancel';

/** `--listen host:port` (an IPv4 address, `[IPv6]` or a host name; port 0–65535, 0 picks a free one). */
export function parseListen(text: string): { host: string; port: number } {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):([0-9]{1,5})$/.exec(text);
  const port = m ? Number(m[3]) : NaN;
  const host = m ? (m[1] ?? m[2]!) : '';
  const validHost = m?.[1] !== undefined ? isIP(host) === 6 : /^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$/.test(host);
  if (!m || !validHost || !(port >= 0 && port <= 65535))
    throw new UsageError(
      `--listen must be host:port (e.g. 127.0.0.1:8420 or [::1]:8420), got ${JSON.stringify(clip(text, 80))}`,
    );
  return { host, port };
}

/**
 * `--rate`, `--burst`, `--max-streams-per-token`, `--max-streams-per-tenant`, `--max-streams`,
 * `--max-queued-per-tenant`: a positive whole number up to 1,000,000.
 */
export function parseRateFlag(flag: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = /^[0-9]{1,7}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1 && n <= 1_000_000))
    throw new UsageError(`${flag} must be a whole number from 1 to 1000000, got ${JSON.stringify(clip(text, 40))}`);
  return n;
}

/** Options of {@link serveCommand} (validated by the command table). */
export interface ServeOptions {
  listen: { host: string; port: number };
  onStop: OnStop;
  drainTimeoutMs: number;
  rate: { rate: number; burst: number };
  /** `--max-streams-per-token` / `--max-streams-per-tenant` / `--max-streams`: caps on open streams. */
  streams?: { perToken: number; perTenant?: number; total: number };
  /** `--webhook-allow` (default: loopback only). */
  webhookAllow?: string;
  /** `--api-host-config`: the `default` tenant's admin may change host-level configuration through the API. */
  hostConfig?: boolean;
  /** `--console`: serve the admin console at /console. */
  console?: boolean;
}

/**
 * `paddock serve`: the host (store, recovery, gateway listener) and the HTTP API on top, until SIGTERM/SIGINT.
 * Stop: new requests answer 503, the listener closes, the runs this process holds drain (up to the timeout, then
 * are cancelled) or are cancelled at once; a second signal cancels at once. Then the gateway and the store close.
 */
export async function serveCommand(config: HostConfig, options: ServeOptions, err: Out): Promise<number> {
  // Checked before the host starts: a bad allow list is a usage error that changes nothing.
  const { parseWebhookAllow } = await import('../../api/webhooks/allowList.js');
  const allow = parseWebhookAllow(options.webhookAllow);
  // Also before the host starts: a console that is not built is said at once, not as a 404 later.
  const consoleFiles = options.console ? (await import('../../api/console/assets.js')).loadConsoleFiles() : undefined;
  // On a shared store a lost lease stops the server like a signal, cancelling what it holds (docs/scale-out.md §4).
  let loseLease: (why: string) => void = () => undefined;
  const leaseLost = new Promise<string>((resolve) => (loseLease = resolve));
  const host = await openHost(config, { listen: true, balance: true, onLeaseLost: (why) => loseLease(why) });
  for (const line of describeRecovery(host.recovery)) err(line);
  const dispatcher = host.container.resolve(TOKENS.Dispatcher);
  let stopping = false;
  let app;
  const { createMetrics } = await import('../../api/metrics/metrics.js');
  const { startWebhookDelivery } = await import('../../api/webhooks/worker.js');
  const metrics = createMetrics(host);
  const webhooks = startWebhookDelivery(host.store, {
    allow,
    logger: host.container.resolve(TOKENS.Logger),
    onResult: (result) => metrics.webhookDelivery(result),
  });
  const closeHost = async () => {
    await webhooks.stop();
    metrics.close();
    await host.close();
  };
  try {
    const { buildServer } = await import('../../api/server.js');
    app = await buildServer(host, {
      rate: options.rate,
      stopping: () => stopping,
      metrics,
      streams: options.streams,
      hostConfig: options.hostConfig === true,
      console: consoleFiles,
    });
    await app.listen({ host: options.listen.host, port: options.listen.port });
  } catch (error) {
    await closeHost();
    throw error;
  }
  const address = app.server.address();
  const url =
    address && typeof address === 'object'
      ? `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`
      : String(address);
  err(`paddock serve: listening on ${url}`);

  // The runs this process holds: queued or running with this process as their owner (on a shared store: its lease,
  // since another machine's host may have the same pid).
  const lease = host.store.lease;
  const held = () =>
    host.store
      .runs({ status: ['queued', 'running'], limit: 1_000_000 })
      .filter((r) =>
        lease ? r.ownerHost === lease.hostId && r.ownerEpoch === lease.epoch : r.hostPid === process.pid,
      );
  const cancelHeld = (reason: string) => {
    if (lease)
      dispatcher.cancelAll(reason); // a write refused for a lost lease is logged, not thrown
    else for (const run of held()) dispatcher.cancel(run.id, reason);
  };

  const stopped = new Promise<string>((resolve) => {
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      signals += 1;
      if (signals === 1) resolve(signal);
      else {
        err(`paddock serve: ${signal} again: cancelling the runs this process holds`);
        cancelHeld(`the server was stopped (${signal} twice)`);
      }
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  const lost = leaseLost.then((why) => {
    err(`paddock serve: ${why}`);
    return 'lease lost' as const;
  });
  const signal = await Promise.race([stopped, lost]);
  stopping = true;
  // A lease is most often lost with the database out of reach: the stop must not need it (outside attack 5: a read
  // here failing made a host that lost its lease exit 2, a usage error, with the store's error).
  let count: string;
  try {
    count = String(held().length);
  } catch (error) {
    count = `an unknown number of (the store: ${(error as Error).message})`;
  }
  const drains = options.onStop === 'drain' && signal !== 'lease lost';
  err(
    `paddock serve: ${signal}: stopping (${count} run(s) held; ` +
      `${drains ? `draining up to ${options.drainTimeoutMs} ms` : 'cancelling them'})`,
  );
  const closing = app.close();
  // A lost lease's runs were cancelled by the host already (start.ts): nothing is left to drain for.
  if (options.onStop === 'cancel' || signal === 'lease lost')
    cancelHeld(`the server was stopped (${signal}, --on-stop cancel)`);
  else {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>(
      (resolve) => (timer = setTimeout(() => resolve(true), options.drainTimeoutMs)),
    );
    if (await Promise.race([dispatcher.drain().then(() => false), timedOut]))
      cancelHeld(`the server was stopped (${signal}) and its drain timeout of ${options.drainTimeoutMs} ms passed`);
    clearTimeout(timer);
  }
  await dispatcher.drain();
  await closing;
  try {
    await closeHost();
  } catch (error) {
    // After a lost lease the store may still be out of reach: what could not be closed is said, the exit stays 1.
    if (signal !== 'lease lost') throw error;
    err(`paddock serve: while stopping: ${(error as Error).message}`);
  }
  err('paddock serve: stopped');
  return signal === 'lease lost' ? 1 : 0;
}

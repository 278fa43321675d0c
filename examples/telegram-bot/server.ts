// The bot's webhook: a node http server taking Telegram's POSTs on one path, checked with the secret token given
// to setWebhook (Telegram sends it as X-Telegram-Bot-Api-Secret-Token; anyone else who finds the URL is refused).
import { createServer, type Server } from 'node:http';
import { BotError, webhookCallback, type Bot } from 'grammy';

/** A server answering Telegram's webhook POSTs at `path`; 404 elsewhere; 500 when handling an update failed. */
export function createWebhookServer(
  bot: Bot,
  options: { path: string; secretToken: string; log?: (line: string) => void },
): Server {
  const log = options.log ?? ((line) => console.error(line));
  const handle = webhookCallback(bot, 'http', { secretToken: options.secretToken });
  return createServer((req, res) => {
    if (req.method !== 'POST' || new URL(req.url ?? '/', 'http://x').pathname !== options.path)
      return void res.writeHead(404).end();
    // A failed update (paddock unreachable, a refused dispatch) answers 500: Telegram delivers it again later.
    handle(req, res).catch((error: unknown) => {
      // The message only: a BotError holds the context, and the context holds the bot's token.
      const cause = error instanceof BotError ? error.error : error;
      log(`an update failed: ${cause instanceof Error ? cause.message : String(cause)}`);
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
}

// The bot's webhook: a node http server taking Telegram's POSTs on one path, checked with the secret token given
// to setWebhook (Telegram sends it as X-Telegram-Bot-Api-Secret-Token; anyone else who finds the URL is refused).
import { createServer, type Server } from 'node:http';
import { webhookCallback, type Bot } from 'grammy';

/** A server answering Telegram's webhook POSTs at `path`; 404 elsewhere; 500 when handling an update failed. */
export function createWebhookServer(bot: Bot, options: { path: string; secretToken: string }): Server {
  const handle = webhookCallback(bot, 'http', { secretToken: options.secretToken });
  return createServer((req, res) => {
    if (req.method !== 'POST' || new URL(req.url ?? '/', 'http://x').pathname !== options.path)
      return void res.writeHead(404).end();
    // A failed update (paddock unreachable, a refused dispatch) answers 500: Telegram delivers it again later.
    handle(req, res).catch((error: unknown) => {
      console.error('update failed', error);
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
}

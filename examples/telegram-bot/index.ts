// Run: TELEGRAM_BOT_TOKEN=… TELEGRAM_WEBHOOK_SECRET=… PADDOCK_TOKEN=pdk_… [PADDOCK_URL=…] [PORT=8788] \
//   node --import tsx examples/telegram-bot/index.ts
// Then point Telegram at it (README.md):
//   setWebhook url=https://<your host>/telegram secret_token=$TELEGRAM_WEBHOOK_SECRET
import { PaddockClient } from '../bot-client/client.js';
import { createTelegramBot } from './bot.js';
import { createWebhookServer } from './server.js';

const need = (name: string) => process.env[name] ?? (console.error(`set ${name}`), process.exit(2));
const { bot, idle } = createTelegramBot({
  telegramToken: need('TELEGRAM_BOT_TOKEN'),
  paddock: new PaddockClient({
    baseUrl: process.env.PADDOCK_URL ?? 'http://127.0.0.1:8420',
    token: need('PADDOCK_TOKEN'),
  }),
  ...(process.env.TELEGRAM_API_ROOT ? { apiRoot: process.env.TELEGRAM_API_ROOT } : {}),
});
const port = Number(process.env.PORT ?? 8788);
const server = createWebhookServer(bot, { path: '/telegram', secretToken: need('TELEGRAM_WEBHOOK_SECRET') });
server.listen(port, '127.0.0.1', () => console.error(`webhook on http://127.0.0.1:${port}/telegram`));
process.once('SIGTERM', () => {
  server.close(); // takes no more updates; the replies being streamed finish
  void idle().then(() => process.exit(0));
});

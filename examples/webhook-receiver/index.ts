// Run: PADDOCK_WEBHOOK_SECRET=whsec_… node --import tsx examples/webhook-receiver/index.ts [port]
import { createReceiver } from './receiver.js';

const secret = process.env.PADDOCK_WEBHOOK_SECRET;
if (!secret) throw new Error('set PADDOCK_WEBHOOK_SECRET to the secret `POST /v1/webhooks` answered');
const port = Number(process.argv[2] ?? 8787);
createReceiver({
  secret,
  onDelivery: (p) =>
    console.log(`${p.runId} ${(p.outcome as { status: string }).status}: ${(p.reply as { text: string }).text}`),
}).listen(port, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${port}/`));

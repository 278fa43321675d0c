// Run: PADDOCK_URL=http://127.0.0.1:8420 PADDOCK_TOKEN=pdk_… \
//   node --import tsx examples/bot-client/index.ts <platform> <bot> <conversation> <text…>
// Dispatches one message and prints the reply as it streams; Ctrl-C cancels the run.
import { randomUUID } from 'node:crypto';
import { PaddockClient, PaddockError } from './client.js';
import { Reply } from './reply.js';

const [platform, bot, conversation, ...words] = process.argv.slice(2);
const token = process.env.PADDOCK_TOKEN;
if (!platform || !bot || !conversation || words.length === 0 || !token) {
  console.error('usage: PADDOCK_TOKEN=pdk_… index.ts <platform> <bot> <conversation> <text…>  (PADDOCK_URL optional)');
  process.exit(2);
}
const paddock = new PaddockClient({ baseUrl: process.env.PADDOCK_URL ?? 'http://127.0.0.1:8420', token });

try {
  const run = await paddock.dispatch({
    id: randomUUID(), // a real platform uses its own message or update id, so its redeliveries are duplicates
    platform,
    bot,
    conversation: { type: 'private', id: conversation },
    sender: { id: 'bot-client-example' },
    message: { parts: [{ type: 'text', text: words.join(' ') }] },
    receivedAt: new Date().toISOString(),
  });
  console.error(`${run.status} ${run.runId} (binding ${run.bindingId}, session ${run.sessionId})`);
  process.once('SIGINT', () => void paddock.cancel(run.runId, 'Ctrl-C').catch(() => undefined));

  const reply = new Reply();
  let printed = 0;
  for await (const event of paddock.stream({ runId: run.runId })) {
    if (!reply.take(event)) continue;
    process.stdout.write(reply.text.slice(printed)); // the text only grows: print what is new
    printed = reply.text.length;
  }
  process.stdout.write('\n');
  console.error(`run ${reply.outcome?.status}: ${reply.outcome?.reason}`);
  process.exitCode = reply.outcome?.status === 'completed' ? 0 : 1;
} catch (error) {
  console.error(error instanceof PaddockError ? `${error.message} ${JSON.stringify(error.problem)}` : error);
  process.exitCode = 1;
}

// examples/telegram-bot: the real grammY bot behind its webhook, dispatching to a real `paddock serve` child and
// editing its reply in a chat of a Bot API stand-in (test/fixtures/fakeBotApi.ts, a named fake: the real Bot API is
// on the internet). All on loopback.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PaddockClient } from '../../examples/bot-client/client.js';
import { createTelegramBot, PLACEHOLDER, type TelegramBot } from '../../examples/telegram-bot/bot.js';
import { fitTelegram, TELEGRAM_MAX_TEXT } from '../../examples/telegram-bot/editor.js';
import { createWebhookServer } from '../../examples/telegram-bot/server.js';
import { fakeBotApi, type BotApiCall, type FakeBotApi } from '../fixtures/fakeBotApi.js';
import { cuedServe, type CuedServe } from '../helpers/cuedServe.js';

const TELEGRAM_TOKEN = '123456:test-token';
const UNROUTED_TOKEN = '654321:canary-7f3a9c-unrouted-token';
const SECRET = 'webhook-secret-1';
const EDIT_INTERVAL_MS = 300;

let served: CuedServe;
let api: FakeBotApi;
let paddock: PaddockClient;
const bots: { tg: TelegramBot; url: string; close: () => Promise<void> }[] = [];
const logged: string[] = [];

/** The bot behind its webhook server on 127.0.0.1. */
async function startBot(token: string, username?: string) {
  const tg = createTelegramBot({
    telegramToken: token,
    paddock,
    apiRoot: api.apiRoot,
    editIntervalMs: EDIT_INTERVAL_MS,
    ...(username ? { botInfo: { id: 1, is_bot: true, first_name: username, username } as never } : {}),
    log: (line) => logged.push(line),
  });
  const server = createWebhookServer(tg.bot, { path: '/telegram', secretToken: SECRET, log: (l) => logged.push(l) });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const bot = {
    tg,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/telegram`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  bots.push(bot);
  return bot;
}

beforeAll(async () => {
  served = await cuedServe([{ id: 'paddock_test_bot' }]);
  paddock = new PaddockClient({ baseUrl: served.server.url, token: await served.token('default', 'platform') });
  api = await fakeBotApi({ [TELEGRAM_TOKEN]: 'paddock_test_bot', [UNROUTED_TOKEN]: 'unrouted_bot' });
}, 120_000);
afterAll(async () => {
  for (const b of bots) await b.close();
  await api.close();
  const code = await served.stop();
  expect(code, served.server.stderr().slice(-3000)).toBe(0);
});

/** A Telegram update with a text message from user 4242 in their private chat `chatId`. */
const update = (updateId: number, chatId: number, text: string) => ({
  update_id: updateId,
  message: {
    message_id: updateId % 1000,
    date: 1_764_547_200,
    chat: { id: chatId, type: 'private', first_name: 'Ada' },
    from: { id: 4242, is_bot: false, first_name: 'Ada' },
    text,
  },
});

/** POST an update to the webhook as Telegram does (with the secret token header unless told otherwise). */
async function deliver(url: string, body: unknown, secret: string | null = SECRET): Promise<number> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(secret !== null ? { 'x-telegram-bot-api-secret-token': secret } : {}),
    },
    body: JSON.stringify(body),
  });
  await res.text();
  return res.status;
}

const to = (chatId: number) => (c: BotApiCall) => Number(c.payload.chat_id) === chatId;
const edits = (chatId: number) => api.calls.filter((c) => c.method === 'editMessageText' && to(chatId)(c));

describe('examples/telegram-bot', () => {
  it('answers with a placeholder, edits it as the run streams (throttled), runs a redelivery once', async () => {
    const bot = await startBot(TELEGRAM_TOKEN);
    const chat = 4242;
    // Anyone but Telegram (no or a wrong secret token) is refused, and nothing is dispatched.
    expect(await deliver(bot.url, update(5001, chat, 'forged'), null)).toBe(401);
    expect(await deliver(bot.url, update(5001, chat, 'forged'), 'guess')).toBe(401);

    // Telegram delivers the update three times at once (a slow first answer): one run, one reply.
    const first = update(5001, chat, 'hi bot');
    expect(await Promise.all([1, 2, 3].map(() => deliver(bot.url, first)))).toEqual([200, 200, 200]);
    const cued = await served.cues.next();
    expect(cued.text).toBe('hi bot');
    const placeholder = await api.waitFor((c) => c.method === 'sendMessage' && to(chat)(c));
    expect(placeholder.payload).toMatchObject({ text: PLACEHOLDER, reply_parameters: { message_id: 1 } });
    const messageId = placeholder.result!.message_id!;

    cued.say('Hello');
    await api.waitFor((c) => c.method === 'editMessageText' && c.payload.text === 'Hello');
    expect(await deliver(bot.url, first)).toBe(200); // and once more while the reply streams
    cued.say('world');
    cued.end();
    await api.waitFor((c) => c.method === 'editMessageText' && c.payload.text === 'Hello\n\nworld');
    await bot.tg.idle();
    expect(await deliver(bot.url, first)).toBe(200); // and once after the run ended
    await bot.tg.idle();

    expect(api.calls.filter((c) => c.method === 'sendMessage')).toHaveLength(1);
    expect(api.textOf(chat, messageId)).toBe('Hello\n\nworld');
    const done = edits(chat);
    expect(done.map((c) => [c.payload.message_id, c.payload.text, c.ok])).toEqual([
      [messageId, 'Hello', true],
      [messageId, 'Hello\n\nworld', true],
    ]);
    expect(done[1]!.at - done[0]!.at).toBeGreaterThanOrEqual(EDIT_INTERVAL_MS); // the throttle
    expect(served.cues.runs.map((r) => r.text)).toEqual(['hi bot']); // ran once

    // What paddock received: event id = the update id, conversation = the chat, bot = the bot's username.
    const run = await paddock.run(cued.runId);
    const received = [];
    for await (const e of paddock.stream({ sessionId: String(run.sessionId) })) {
      if (e.type === 'message.received') received.push(e.data.event);
      if (e.type === 'run.ended') break;
    }
    expect(received).toEqual([
      expect.objectContaining({
        id: '5001',
        platform: 'telegram',
        bot: 'paddock_test_bot',
        conversation: { type: 'private', id: String(chat) },
        sender: { id: '4242', name: 'Ada', isBot: false },
        message: { id: '1', parts: [{ type: 'text', text: 'hi bot' }] },
      }),
    ]);
  });

  it('waits out a 429 on an edit as told, and ends with how a run that did not complete ended', async () => {
    const bot = await startBot(TELEGRAM_TOKEN);
    const chat = 4343;
    expect(await deliver(bot.url, update(5002, chat, 'long job'))).toBe(200);
    const cued = await served.cues.next();
    await api.waitFor((c) => c.method === 'sendMessage' && to(chat)(c));
    api.failNext('editMessageText', {
      error_code: 429,
      description: 'Too Many Requests: retry after 1',
      parameters: { retry_after: 1 },
    });
    cued.say('partial');
    const limited = await api.waitFor((c) => c.method === 'editMessageText' && to(chat)(c) && !c.ok);
    await paddock.cancel(cued.runId, 'the user gave up');
    const last = await api.waitFor((c) => c.method === 'editMessageText' && to(chat)(c) && c.ok);
    await bot.tg.idle();
    expect(last.payload.text).toMatch(/^partial\n\n⚠️ the run ended cancelled: /);
    expect(last.at - limited.at).toBeGreaterThanOrEqual(1000);
    expect(edits(chat).map((c) => c.ok)).toEqual([false, true]);
  });

  it('a message paddock refuses (no binding for this bot) answers 500 (Telegram retries), sends nothing', async () => {
    const bot = await startBot(UNROUTED_TOKEN, 'unrouted_bot');
    const before = served.cues.runs.length;
    expect(await deliver(bot.url, update(6001, 4444, 'anyone there?'))).toBe(500);
    expect(api.calls.filter((c) => c.token === UNROUTED_TOKEN)).toEqual([]);
    expect(served.cues.runs).toHaveLength(before);
    expect(logged).toEqual([
      expect.stringMatching(/^an update failed: paddock answered 422 no_binding: no binding routes/),
    ]);
    expect(logged.join('\n')).not.toContain(UNROUTED_TOKEN); // the bot's token is never logged
  });

  it("cuts a reply to Telegram's 4096 characters, never inside an emoji", () => {
    expect(fitTelegram('short')).toBe('short');
    const exact = 'x'.repeat(TELEGRAM_MAX_TEXT);
    expect(fitTelegram(exact)).toBe(exact);
    for (const pad of [0, 1]) {
      const cut = fitTelegram('x'.repeat(TELEGRAM_MAX_TEXT - 3 + pad) + '😀'.repeat(10));
      expect(cut.length).toBeLessThanOrEqual(TELEGRAM_MAX_TEXT);
      expect(cut.endsWith(' …')).toBe(true);
      expect(cut).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/); // no lone high surrogate
    }
  });
});

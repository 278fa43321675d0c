// A grammY bot that hands every text message to paddock and streams the run's reply into one Telegram message:
// dispatch (event id = the update id, so a Telegram redelivery is a paddock duplicate and never runs twice), a
// placeholder reply, then edits as the run's text arrives, and a last edit with the whole reply or how it ended.
import { Bot, type Context } from 'grammy';
import type { UserFromGetMe } from 'grammy/types';
import { PaddockClient, type Dispatched } from '../bot-client/client.js';
import { Reply } from '../bot-client/reply.js';
import { ThrottledEditor } from './editor.js';

/** The text of the placeholder reply, shown until the run says something. */
export const PLACEHOLDER = '…';

/** Options of {@link createTelegramBot}. */
export interface TelegramBotOptions {
  /** The bot's token from @BotFather. */
  telegramToken: string;
  paddock: PaddockClient;
  /** The Bot API's address (default Telegram's own; a local Bot API server, or a test's stand-in). */
  apiRoot?: string;
  /** At least this long between two edits of one message (default 1000 ms: Telegram's limit is about 1/s per chat). */
  editIntervalMs?: number;
  /** The bot's own user, when known (otherwise grammY asks getMe once). */
  botInfo?: UserFromGetMe;
  /** Where failures are told (default stderr); gets a line, never the bot's token. */
  log?: (line: string) => void;
}

/** A bot, and a promise for every reply it is still streaming (await `idle()` before stopping). */
export interface TelegramBot {
  bot: Bot;
  idle(): Promise<void>;
}

/** The bot: `bot.on('message:text')` dispatches to paddock and streams the reply. */
export function createTelegramBot(options: TelegramBotOptions): TelegramBot {
  const log = options.log ?? ((line) => console.error(line));
  const says = (error: unknown) => (error instanceof Error ? error.message : String(error));
  const bot = new Bot(options.telegramToken, {
    client: options.apiRoot ? { apiRoot: options.apiRoot } : {},
    ...(options.botInfo ? { botInfo: options.botInfo } : {}),
  });
  // Runs this process is streaming (or has streamed) into a chat: a redelivered update must not start a second
  // reply. Bounded: the oldest are forgotten.
  const following = new Set<string>();
  // grammY's default error handler prints to the console and rethrows the whole BotError, whose context holds the
  // bot's token: rethrow only the cause, so the webhook answers 500 (Telegram retries) and logs one line.
  bot.catch((error) => {
    throw error.error;
  });
  const streaming = new Set<Promise<void>>();

  bot.on('message:text', async (ctx) => {
    const chat = ctx.chat;
    // Throws when paddock refuses or is unreachable: the webhook then answers 500 and Telegram delivers the update
    // again later, which is safe (same event id).
    const run = await options.paddock.dispatch({
      id: String(ctx.update.update_id),
      platform: 'telegram',
      bot: ctx.me.username,
      conversation: { type: chat.type === 'private' ? 'private' : 'group', id: String(chat.id), ...titleOf(chat) },
      sender: { id: String(ctx.from.id), name: ctx.from.first_name, isBot: ctx.from.is_bot },
      message: { id: String(ctx.msg.message_id), parts: [{ type: 'text', text: ctx.msg.text }] },
      receivedAt: new Date(ctx.msg.date * 1000).toISOString(),
    });
    // A duplicate this process already follows: the first delivery's reply is on its way. A duplicate it does not
    // follow (the first delivery failed before its placeholder, or this process restarted) gets its reply now.
    if (following.has(run.runId)) return;
    following.add(run.runId);
    if (following.size > 10_000) following.delete(following.values().next().value!);
    const placeholder = await ctx.reply(PLACEHOLDER, { reply_parameters: { message_id: ctx.msg.message_id } });
    // Streamed after the webhook has answered: Telegram waits for no reply, and redelivers a slow answer.
    const done = streamReply(ctx, run, placeholder.message_id)
      .catch((error: unknown) => log(`run ${run.runId}: streaming its reply failed: ${says(error)}`))
      .finally(() => streaming.delete(done));
    streaming.add(done);
  });

  /** Edit the placeholder as the run's reply grows; the last edit is the whole reply, or the run's outcome. */
  async function streamReply(ctx: Context, run: Dispatched, messageId: number): Promise<void> {
    const chatId = ctx.chat!.id;
    const editor = new ThrottledEditor(
      (text) => ctx.api.editMessageText(chatId, messageId, text),
      PLACEHOLDER,
      options.editIntervalMs ?? 1000,
      (error) => log(`run ${run.runId}: an edit failed: ${says(error)}`),
    );
    const reply = new Reply();
    for await (const event of options.paddock.stream({ runId: run.runId }))
      if (reply.take(event)) editor.set(reply.text);
    const outcome = reply.outcome;
    const ended = outcome?.status === 'completed' ? '' : `⚠️ the run ended ${outcome?.status}: ${outcome?.reason}`;
    await editor.finish([reply.text, ended].filter(Boolean).join('\n\n') || '(no reply)');
  }

  return {
    bot,
    idle: async () => {
      while (streaming.size > 0) await Promise.all(streaming);
    },
  };
}

const titleOf = (chat: { title?: string }) => (chat.title ? { title: chat.title } : {});

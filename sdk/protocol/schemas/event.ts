import { z } from 'zod';
import { IdSchema, MessagePartSchema, TimestampSchema } from './common.js';

/** The chat event a bot platform dispatched, as the runner receives it. */
export const ChatEventSchema = z
  .looseObject({
    /** The platform's own event id; dispatch deduplicates on it. */
    id: IdSchema,
    type: z.string().min(1).default('message'),
    platform: z.string().min(1),
    bot: z.string().min(1),
    conversation: z.looseObject({
      type: z.enum(['private', 'group', 'channel', 'thread']),
      id: IdSchema,
      title: z.string().optional(),
    }),
    sender: z.looseObject({
      id: IdSchema,
      name: z.string().optional(),
      isBot: z.boolean().optional(),
    }),
    message: z.looseObject({
      id: IdSchema.optional(),
      parts: z.array(MessagePartSchema).min(1),
    }),
    receivedAt: TimestampSchema,
  })
  .meta({ id: 'ChatEvent', description: 'A chat event from a bot platform.' });

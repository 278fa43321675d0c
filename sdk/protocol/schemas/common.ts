import { z } from 'zod';

/** Any JSON value (what runner state and tool payloads may hold). */
export const JsonValueSchema = z.json();

/** A non-empty identifier: run, session, binding, resource and event ids. */
export const IdSchema = z.string().min(1).max(256);

/** An ISO-8601 timestamp with offset, e.g. `2026-11-29T09:00:00.000Z`. */
export const TimestampSchema = z.iso.datetime({ offset: true });

/** Token and cost accounting, reported by runners and by the model gateway. */
export const UsageSchema = z
  .looseObject({
    inputTokens: z.int().nonnegative().optional(),
    outputTokens: z.int().nonnegative().optional(),
    cacheReadTokens: z.int().nonnegative().optional(),
    cacheWriteTokens: z.int().nonnegative().optional(),
    costUsd: z.number().nonnegative().optional(),
    model: z.string().optional(),
    turns: z.int().nonnegative().optional(),
  })
  .meta({ id: 'Usage', description: 'Token and cost accounting.' });

const TextPartSchema = z.looseObject({ type: z.literal('text'), text: z.string() });
const ImagePartSchema = z.looseObject({
  type: z.literal('image'),
  url: z.string().optional(),
  artifactId: IdSchema.optional(),
  mimeType: z.string().optional(),
  alt: z.string().optional(),
});
const FilePartSchema = z.looseObject({
  type: z.literal('file'),
  name: z.string().min(1),
  url: z.string().optional(),
  artifactId: IdSchema.optional(),
  mimeType: z.string().optional(),
  size: z.int().nonnegative().optional(),
});
const MentionPartSchema = z.looseObject({
  type: z.literal('mention'),
  userId: IdSchema,
  name: z.string().optional(),
});
const QuotePartSchema = z.looseObject({
  type: z.literal('quote'),
  messageId: IdSchema.optional(),
  text: z.string().optional(),
});

/** One part of a chat message: text, image, file, mention or quote. */
export const MessagePartSchema = z
  .discriminatedUnion('type', [TextPartSchema, ImagePartSchema, FilePartSchema, MentionPartSchema, QuotePartSchema])
  .meta({ id: 'MessagePart', description: 'One part of a chat message.' });

/** The kinds of side effect a runner may cause; shared by manifests, approvals and policy. */
export const EffectSchema = z
  .enum(['fs.read', 'fs.write', 'exec', 'network', 'credential', 'destructive', 'publish'])
  .meta({
    id: 'Effect',
    description:
      'A kind of side effect. `destructive` (mass deletes, history rewrites) and `publish` (push, publish, deploy) ' +
      'were added in v1 without a version change: a runner that never names them is unaffected.',
  });

import { join } from 'node:path';
import { z } from 'zod';
import type { KnowledgeBaseResource } from '../../bindings/schema.js';
import { readSecretRef } from '../../secrets/hostSecrets.js';
import type { Redactor } from '../../secrets/redactor.js';
import { FolderIndex, type KbChunk } from './folderIndex.js';

const RetrieverAnswerSchema = z.object({
  chunks: z
    .array(
      z.object({
        text: z.string(),
        source: z.object({ id: z.string(), title: z.string().optional(), uri: z.string().optional() }),
        score: z.number().optional(),
      }),
    )
    .max(200),
});

/** Ask an HTTP retriever (`POST {query, topK}` → `{chunks}`), with the resource's key as a bearer token. */
async function httpRetrieve(
  kb: KnowledgeBaseResource,
  query: string,
  topK: number,
  redactor: Redactor,
  signal?: AbortSignal,
): Promise<KbChunk[]> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (kb.apiKey) {
    const key = readSecretRef(kb.apiKey);
    if (!key) throw new Error(`the key reference of knowledge base "${kb.id}" is not readable on the host`);
    redactor.add(key);
    headers.authorization = `Bearer ${key}`;
  }
  const timeout = AbortSignal.timeout(kb.timeoutMs);
  const response = await fetch(kb.url!, {
    method: 'POST',
    headers,
    body: JSON.stringify({ query, topK }),
    signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
  });
  if (!response.ok) throw new Error(`retriever answered HTTP ${response.status}`);
  const parsed = RetrieverAnswerSchema.safeParse(await response.json());
  if (!parsed.success)
    throw new Error(`retriever answer is not {chunks: [{text, source: {id}}]}: ${parsed.error.issues[0]?.message}`);
  return parsed.data.chunks.slice(0, topK);
}

/** Knowledge-base retrieval for the gateway: folder indexes are opened once per host and kept. */
export class KnowledgeBases {
  private readonly indexes = new Map<string, FolderIndex>();

  constructor(
    private readonly dataDir: string,
    private readonly redactor: Redactor,
  ) {}

  /** The best chunks of a knowledge base for a query, redacted. */
  async retrieve(kb: KnowledgeBaseResource, query: string, topK: number, signal?: AbortSignal): Promise<KbChunk[]> {
    const chunks = kb.url
      ? await httpRetrieve(kb, query, topK, this.redactor, signal)
      : this.index(kb).search(query, topK);
    return this.redactor.value(chunks);
  }

  private index(kb: KnowledgeBaseResource): FolderIndex {
    const key = `${kb.id}\0${kb.path}`;
    let index = this.indexes.get(key);
    if (!index) this.indexes.set(key, (index = new FolderIndex(kb.path!, join(this.dataDir, 'kb', `${kb.id}.sqlite`))));
    return index;
  }

  close(): void {
    for (const index of this.indexes.values()) index.close();
    this.indexes.clear();
  }
}

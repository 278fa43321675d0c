import type { Gateway } from '../gateway.js';
import type { GatewayRun } from '../runContext.js';
import type { KbChunk } from './folderIndex.js';

/** Why a run's knowledge-base search was refused or failed. */
export class KbRefusal extends Error {
  constructor(
    message: string,
    /** `binding.knowledgeBases` when not granted; absent when the retriever failed. */
    readonly deniedBy?: string,
  ) {
    super(message);
  }
}

/**
 * One knowledge-base search of a run, for every path that offers it (SDK `kb/retrieve`, the
 * `/mcp/_kb` endpoint): checked against the run's grants, redacted, audited `kb.retrieve`.
 */
export async function retrieveForRun(
  gateway: Gateway,
  run: GatewayRun,
  id: string,
  query: string,
  topK: number,
  signal?: AbortSignal,
): Promise<KbChunk[]> {
  const kb = run.resources.knowledgeBases.get(id);
  if (!kb || !run.access.knowledgeBases.some((k) => k.id === id))
    throw new KbRefusal(`knowledge base "${id}" is not granted`, 'binding.knowledgeBases');
  try {
    const chunks = await gateway.knowledgeBases.retrieve(kb, query, topK, signal);
    gateway.auditRun(run, 'kb.retrieve', {
      knowledgeBase: id,
      kind: kb.url ? 'http' : 'folder',
      queryChars: query.length,
      topK,
      chunks: chunks.length,
      sources: chunks.map((c) => c.source.id),
    });
    if (kb.sensitive !== undefined && chunks.length > 0) run.taint?.(kb.sensitive, `knowledge base ${id}`);
    return chunks;
  } catch (error) {
    const message = gateway.redact(error instanceof Error ? error.message : String(error));
    gateway.auditRun(run, 'kb.retrieve', { knowledgeBase: id, failed: message });
    throw new KbRefusal(`knowledge base "${id}": ${message}`);
  }
}

/** The audit actor of a change made through the API. */
import type { ApiPrincipal } from '../state/apiTokens.js';

/**
 * `api:<tokenId>`, or `api:<tokenId>/user:<by>` when the client says who acted: the token comes first and is always
 * there (what the server verified), `by` is only the client's word and never replaces it.
 */
export function apiActor(principal: ApiPrincipal, by?: string): string {
  return `api:${principal.tokenId}${by ? `/user:${by}` : ''}`;
}

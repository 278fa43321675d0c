// docs/openapi.json is generated from the route schemas (npm run openapi:gen); this fails when the committed copy is
// stale, like protocol:check for docs/protocol.md.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../../host/api/openapiDoc.js';
import { repoPath } from '../../helpers/fixtures.js';

describe('docs/openapi.json', () => {
  it('is what the routes generate (run npm run openapi:gen after changing a route)', async () => {
    const generated = await openApiDocument();
    expect(readFileSync(repoPath('docs/openapi.json'), 'utf8')).toBe(generated);
    const doc = JSON.parse(generated) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/v1/events', '/v1/runs/{id}', '/v1/runs/{id}/cancel', '/v1/sessions/{id}']),
    );
  });
});

// How `paddock serve --console` serves the console's files (docs/console.md §2), over real HTTP: the shell and its
// hashed assets with a strict CSP and the other security headers, gzip when asked, long caching only for hashed
// names, no token needed for the files and no console at all without the flag.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConsoleFiles } from '../../host/api/console/assets.js';
import { CONSOLE_CSP } from '../../host/api/routes/console.js';
import { startServe, type ServeChild } from '../helpers/serve.js';

let withConsole: ServeChild;
let without: ServeChild;
beforeAll(async () => {
  withConsole = await startServe(mkdtempSync(join(tmpdir(), 'paddock-console-files-')), ['--console']);
  without = await startServe(mkdtempSync(join(tmpdir(), 'paddock-console-none-')));
}, 60_000);
afterAll(async () => {
  expect(await withConsole.stop()).toBe(0);
  expect(await without.stop()).toBe(0);
});

const get = (base: string, path: string, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, { headers, redirect: 'manual' });

describe('paddock serve --console', () => {
  it('serves the shell with a strict CSP, no caching, and the hashed script and stylesheet it names', async () => {
    const res = await get(withConsole.url, '/console/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toMatch(/script-src 'self';/);
    expect(CONSOLE_CSP).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const html = await res.text();
    // No inline script or style (the CSP would block them): only the two hashed files.
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|style=/);
    const script = /src="(\/console\/assets\/main-[A-Z0-9]+\.js)"/.exec(html)?.[1];
    const style = /href="(\/console\/assets\/main-[A-Z0-9]+\.css)"/.exec(html)?.[1];
    expect(script && style).toBeTruthy();
    for (const [path, type] of [
      [script!, 'text/javascript; charset=utf-8'],
      [style!, 'text/css; charset=utf-8'],
    ] as const) {
      const asset = await get(withConsole.url, path);
      expect(asset.status).toBe(200);
      expect(asset.headers.get('content-type')).toBe(type);
      expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(asset.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
      expect((await asset.text()).length).toBeGreaterThan(1000);
    }
  });

  it('answers gzip to a client that accepts it, the same bytes as the plain answer', async () => {
    const html = await (await get(withConsole.url, '/console/')).text();
    const script = /src="(\/console\/assets\/[^"]+)"/.exec(html)![1]!;
    const plain = Buffer.from(await (await get(withConsole.url, script)).arrayBuffer());
    // node:http without decompression, to see the encoded bytes.
    const { request } = await import('node:http');
    const gz = await new Promise<{ encoding?: string; body: Buffer }>((resolve, reject) => {
      const req = request(`${withConsole.url}${script}`, { headers: { 'accept-encoding': 'gzip' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ encoding: res.headers['content-encoding'], body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(gz.encoding).toBe('gzip');
    expect(gz.body.length).toBeLessThan(plain.length);
    expect(gunzipSync(gz.body).equals(plain)).toBe(true);
  });

  it('redirects /console, gives the shell for other paths under it, and 404s an unknown asset', async () => {
    const redirect = await get(withConsole.url, '/console');
    expect(redirect.status).toBe(308);
    expect(redirect.headers.get('location')).toBe('/console/');
    const deep = await get(withConsole.url, '/console/bindings/agent');
    expect(deep.status).toBe(200);
    expect(await deep.text()).toContain('<div id="app">');
    const missing = await get(withConsole.url, '/console/assets/main-NOTTHERE.js');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toContain('application/problem+json');
    const traversal = await get(withConsole.url, '/console/assets/..%2F..%2Fpackage.json');
    expect(traversal.status).toBe(404);
  });

  it('the files need no token, while every API route still does', async () => {
    expect((await get(withConsole.url, '/console/')).status).toBe(200);
    expect((await get(withConsole.url, '/v1/runs')).status).toBe(401);
  });

  it('without --console there is no console: its paths are unknown routes, which need a token like any', async () => {
    for (const path of ['/console', '/console/', '/console/assets/x.js']) {
      const res = await get(without.url, path);
      expect(res.status, path).toBe(401);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(await res.text()).not.toContain('<div id="app">');
    }
  });

  it('a missing build is an error naming the folder and the command that makes it', () => {
    const empty = mkdtempSync(join(tmpdir(), 'paddock-console-unbuilt-'));
    expect(() => loadConsoleFiles(empty)).toThrow(/the console is not built .*run npm run build/);
  });
});

/**
 * `GET /console…` (docs/console.md §2): the admin console's static files, served only under `paddock serve
 * --console`. No data here — the console reads everything through the API with the person's token — so these
 * routes need no token; each answer carries a CSP that allows only this origin's script, style and API.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ConsoleFile, ConsoleFiles } from '../console/assets.js';
import { ApiProblem } from '../problems.js';

/** The console's Content-Security-Policy: nothing inline, nothing from elsewhere, never framed. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

function send(request: FastifyRequest, reply: FastifyReply, file: ConsoleFile, cache: string) {
  const gzip = /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));
  reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .header('cache-control', cache)
    .header('vary', 'accept-encoding')
    .type(file.type);
  if (gzip) reply.header('content-encoding', 'gzip');
  return reply.send(gzip ? file.gzip : file.body);
}

/** Register the console's routes over `files`. */
export function consoleRoutes(app: FastifyInstance, files: ConsoleFiles): void {
  const open = { config: { open: true }, schema: { hide: true } } as const;
  const shell = async (request: FastifyRequest, reply: FastifyReply) => send(request, reply, files.shell, 'no-store');
  app.get('/console', open, async (_request, reply) => reply.redirect('/console/', 308));
  app.get('/console/', open, shell);
  // The app routes by hash; any other path under /console/ (a mistyped or bookmarked one) gets the shell too.
  app.get('/console/*', open, shell);
  app.get<{ Params: { name: string } }>('/console/assets/:name', open, async (request, reply) => {
    const file = files.assets.get(request.params.name);
    if (!file) throw new ApiProblem(404, 'not_found', 'no such console asset');
    // Names carry their content's hash: a changed file is a new name, so browsers may keep these for good.
    return send(request, reply, file, 'public, max-age=31536000, immutable');
  });
}

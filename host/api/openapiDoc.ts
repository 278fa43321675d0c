/**
 * The OpenAPI 3.1 document of `paddock serve`, built from the route schemas with no host behind them (what
 * `GET /openapi.json` serves, and `npm run openapi:gen` commits as docs/openapi.json).
 */
import { pino } from 'pino';
import type { ApiDeps } from './deps.js';
import { buildApi } from './server.js';

/** Deps that refuse every use: the document needs the routes' schemas, never a host. */
function noHost(): ApiDeps {
  const refuse = (): never => {
    throw new Error('no host: this server is built only to describe its routes');
  };
  return {
    get store() {
      return refuse();
    },
    get dispatcher() {
      return refuse();
    },
    get config() {
      return refuse();
    },
    log: pino({ level: 'silent' }),
    stopping: () => false,
  };
}

/** The document as committed: pretty JSON with a final newline. */
export async function openApiDocument(): Promise<string> {
  const app = await buildApi(noHost());
  try {
    await app.ready();
    return `${JSON.stringify(app.swagger(), null, 2)}\n`;
  } finally {
    await app.close();
  }
}

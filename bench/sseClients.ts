// The SSE benchmark's clients, in their own process so the server's CPU and RSS are its own:
// `node --import tsx bench/sseClients.ts <url> <clients> <messages>`. Prints `connected` once every
// response started, then `done` once every client counted <messages> messages (each ends with a blank line).
// SSE_TOKEN: sent as `Authorization: Bearer <token>` (a `paddock serve` stream).
import { request } from 'node:http';

const [url, clientsArg, messagesArg] = process.argv.slice(2);
const clients = Number(clientsArg);
const messages = Number(messagesArg);
let connected = 0;
let finished = 0;
for (let i = 0; i < clients; i++) {
  const headers: Record<string, string> = { accept: 'text/event-stream' };
  if (process.env.SSE_TOKEN) headers.authorization = `Bearer ${process.env.SSE_TOKEN}`;
  const req = request(url!, { agent: false, headers }, (res) => {
    if (res.statusCode !== 200) {
      console.error(`client ${i}: status ${res.statusCode}`);
      process.exit(1);
    }
    if (++connected === clients) console.log('connected');
    let seen = 0;
    let tail = '';
    let done = false;
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      // Count message ends ("\n\n"), including one split across two chunks.
      const text = tail + chunk;
      for (let at = text.indexOf('\n\n'); at !== -1; at = text.indexOf('\n\n', at + 2)) seen += 1;
      tail = text.endsWith('\n') ? '\n' : '';
      if (!done && seen >= messages) {
        done = true;
        if (++finished === clients) console.log('done');
      }
    });
  });
  req.on('error', (error) => {
    console.error(`client ${i}: ${error.message}`);
    process.exit(1);
  });
  req.end();
}

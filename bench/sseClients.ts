// The SSE benchmark's clients, in their own process so the server's CPU and RSS are its own:
// `node --import tsx bench/sseClients.ts <url> <clients> <messages>`. Prints `connected` once every
// response started, then `done` once every client counted <messages> messages (each ends with a blank line).
import { request } from 'node:http';

const [url, clientsArg, messagesArg] = process.argv.slice(2);
const clients = Number(clientsArg);
const messages = Number(messagesArg);
let connected = 0;
let finished = 0;
for (let i = 0; i < clients; i++) {
  const req = request(url!, { agent: false, headers: { accept: 'text/event-stream' } }, (res) => {
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

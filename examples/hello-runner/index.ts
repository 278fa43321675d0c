// The process entry the host starts (runner.json → entry.node). Run it:
//   node bin/paddock.js run --runner examples/hello-runner --text "Ada"
import { serve } from 'paddock/sdk';
import { helloRunner } from './runner.js';

await serve(helloRunner);

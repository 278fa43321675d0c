import { serve } from 'paddock/sdk';
import { localAgentRunner } from './runner.js';

await serve(localAgentRunner);

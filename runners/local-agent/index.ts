import { serve } from '../../sdk/index.js';
import { localAgentRunner } from './runner.js';

await serve(localAgentRunner);

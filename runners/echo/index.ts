import { serve } from '../../sdk/index.js';
import { echoRunner } from './runner.js';

await serve(echoRunner);

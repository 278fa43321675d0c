import { serve } from 'paddock/sdk';
import { echoRunner } from './runner.js';

await serve(echoRunner);

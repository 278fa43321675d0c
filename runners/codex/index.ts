import { serve } from '../../sdk/index.js';
import { codexRunner } from './runner.js';

await serve(codexRunner);

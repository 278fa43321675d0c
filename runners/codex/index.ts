import { serve } from 'paddock/sdk';
import { codexRunner } from './runner.js';

await serve(codexRunner);

import { serve } from 'paddock/sdk';
import { claudeCodeRunner } from './runner.js';

await serve(claudeCodeRunner);

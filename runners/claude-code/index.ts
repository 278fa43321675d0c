import { serve } from '../../sdk/index.js';
import { claudeCodeRunner } from './runner.js';

await serve(claudeCodeRunner);

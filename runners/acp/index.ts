import { serve } from '../../sdk/index.js';
import { acpRunner } from './runner.js';

await serve(acpRunner);

import { serve } from 'paddock/sdk';
import { acpRunner } from './runner.js';

await serve(acpRunner);

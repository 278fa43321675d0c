// Loaded with `node --import <this file>`: appends the URL of every module the process loads to the
// file named by $PADDOCK_MODULE_TRACE (one per line). The same file is the loader-hook module.
import { appendFileSync } from 'node:fs';
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

const traceFile = process.env.PADDOCK_MODULE_TRACE;

/** Loader hook: record, then load as usual. */
export async function load(url, context, next) {
  if (traceFile) appendFileSync(traceFile, `${url}\n`);
  return next(url, context);
}

if (isMainThread && traceFile) register(import.meta.url);

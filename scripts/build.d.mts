// Types of scripts/build.mjs (plain JavaScript: set-up runs it before anything can compile TypeScript).
/** sha256 over every build input's path and content. */
export function sourceHash(): string;
/** Whether dist/ was built from exactly the current sources. */
export function upToDate(hash?: string): boolean;
/** Build dist/ unless it is up to date; throws when tsc fails (dist/ is left as it was). */
export function build(options?: { force?: boolean; log?: (line: string) => void }): 'built' | 'up to date';

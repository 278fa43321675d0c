// The one spelling of a field's path in every config and input error paddock prints.
import { clip } from './clip.js';

/** `a.b[0].c` from a zod issue path; each key clipped (a key is untrusted input, and may be a megabyte long). */
export function fieldPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((acc, part) => {
    if (typeof part === 'number') return `${acc}[${part}]`;
    const key = clip(String(part));
    return acc ? `${acc}.${key}` : key;
  }, '');
}

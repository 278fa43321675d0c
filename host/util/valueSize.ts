/**
 * The size of a parsed JSON-like value written as JSON (strings counted by length, without escapes), counted without
 * building the text, without recursion, and no further than just past `limit`. A value that shares parts (YAML
 * aliases: one 900 KB string referenced 90 times) counts each reference, as storing it would write it: 82 MB from a
 * 0.9 MB request before this was checked.
 */
export function jsonSizeAtMost(value: unknown, limit: number): number {
  let size = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'string') size += item.length + 2;
    else if (item === null || typeof item !== 'object') size += String(item).length;
    else if (Array.isArray(item)) {
      size += 2 + Math.max(0, item.length - 1);
      for (const child of item) stack.push(child);
    } else {
      const entries = Object.entries(item as object);
      size += 2 + Math.max(0, entries.length - 1);
      for (const [key, child] of entries) {
        size += key.length + 3;
        stack.push(child);
      }
    }
    if (size > limit) return size;
  }
  return size;
}

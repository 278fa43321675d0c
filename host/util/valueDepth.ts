/** Nesting depth of a parsed JSON-like value, measured without recursion (a hostile value may be 100 000 deep). */

/**
 * How deeply `value` nests objects and arrays (a scalar is 0, `[]` and `{}` are 1), counting no further than
 * `limit + 1`: enough to tell "over the limit" without walking all of a huge value.
 */
export function valueDepth(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== 'object') continue;
    const here = depth + 1;
    if (here > deepest) deepest = here;
    if (deepest > limit) return deepest;
    for (const child of Object.values(item as object)) stack.push([child, here]);
  }
  return deepest;
}

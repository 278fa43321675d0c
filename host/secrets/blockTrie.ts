/** Characters per trie level (the shortest string held: every level's key is a whole block). */
export const BLOCK = 8;
/** A node holding more strings than this splits them by their next block (a burst trie). */
const BURST = 8;

/** Strings that share the node's first `depth` characters. */
interface Node {
  /** Held here, longest first: all of them until the node bursts, then those too short for a next block. */
  forms: string[];
  /** After the burst: the longer strings, by their block at `depth`. */
  next: Map<string, Node> | undefined;
}

/**
 * The strings that start at a text position, found in time bounded by the matched length, however many strings
 * share a prefix (every run token begins `pdk_run_`, so do its encodings): a trie over 8-character blocks whose
 * nodes hold a short list until it grows past {@link BURST} (the burst trie of Heinz, Zobel and Williams, 2002).
 * Every string is at least {@link BLOCK} characters long.
 */
export class BlockTrie {
  private readonly root = new Map<string, Node>();

  /** Hold `form` (at least BLOCK characters; not held yet). */
  insert(form: string): void {
    let key = form.slice(0, BLOCK);
    let node = this.root.get(key);
    if (!node) return void this.root.set(key, { forms: [form], next: undefined });
    let depth = BLOCK;
    while (node.next && form.length >= depth + BLOCK) {
      key = form.slice(depth, depth + BLOCK);
      const child: Node | undefined = node.next.get(key);
      if (!child) return void node.next.set(key, { forms: [form], next: undefined });
      node = child;
      depth += BLOCK;
    }
    addSorted(node.forms, form);
    if (!node.next && node.forms.length > BURST) burst(node, depth);
  }

  /** Stop holding `form` (held). */
  delete(form: string): void {
    const path: [Map<string, Node>, string][] = [];
    let map = this.root;
    for (let depth = 0; ; depth += BLOCK) {
      const key = form.slice(depth, depth + BLOCK);
      const node = map.get(key)!;
      path.push([map, key]);
      const at = node.forms.indexOf(form);
      if (at !== -1) {
        node.forms.splice(at, 1);
        break;
      }
      map = node.next!;
    }
    // Drop the nodes left empty, deepest first.
    for (let i = path.length - 1; i >= 0; i--) {
      const [parent, key] = path[i]!;
      const node = parent.get(key)!;
      if (node.forms.length > 0 || (node.next && node.next.size > 0)) break;
      parent.delete(key);
    }
  }

  /** Length of the longest held string that occurs in `text` at `start` (0 when none does). */
  longestAt(text: string, start: number): number {
    let node = this.root.get(text.slice(start, start + BLOCK));
    let found = 0;
    for (let depth = BLOCK; node; depth += BLOCK) {
      // Strings deeper down are longer than any held here, so a match below wins.
      for (const form of node.forms) {
        if (form.length > found && text.startsWith(form, start)) {
          found = form.length;
          break;
        }
      }
      if (!node.next || start + depth + BLOCK > text.length) break;
      node = node.next.get(text.slice(start + depth, start + depth + BLOCK));
    }
    return found;
  }
}

/** Insert `form` into a list kept longest first. */
function addSorted(forms: string[], form: string): void {
  let i = forms.length;
  while (i > 0 && forms[i - 1]!.length < form.length) i--;
  forms.splice(i, 0, form);
}

/** Move a node's strings long enough for another block into children keyed by that block. */
function burst(node: Node, depth: number): void {
  const next = new Map<string, Node>();
  const stay: string[] = [];
  for (const form of node.forms) {
    if (form.length < depth + BLOCK) {
      stay.push(form);
      continue;
    }
    const key = form.slice(depth, depth + BLOCK);
    const child = next.get(key);
    if (child)
      child.forms.push(form); // forms arrive longest first, so the child's list stays sorted
    else next.set(key, { forms: [form], next: undefined });
  }
  node.forms = stay;
  node.next = next;
}

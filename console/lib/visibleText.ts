// Every text the console shows goes through the host's escaper for untrusted text (host/util/terminalText.ts, the
// CLI's): bidi overrides and isolates, invisible marks and control characters appear as visible escapes (`\u202e`)
// instead of reordering or hiding what a person reads — an approval's target, a runner's risk note (Trojan Source;
// outside attack on issue 15, finding 2). Newlines and tabs stay. Installed once, as a Preact option: every text
// node and the attributes a person reads (title, aria-label, alt, placeholder) of every element.
import { options, type VNode } from 'preact';
import { terminalSafe } from '../../host/util/terminalText.js';

const READ_ATTRIBUTES = ['title', 'aria-label', 'alt', 'placeholder'] as const;

/** Make every rendered text show its control and invisible characters (call once, before the first render). */
export function showInvisibleCharacters(): void {
  const previous = options.vnode;
  options.vnode = (vnode: VNode) => {
    // A text child: type null, its text in props (Preact's text vnodes).
    if (vnode.type === null && typeof vnode.props === 'string') {
      (vnode as { props: unknown }).props = terminalSafe(vnode.props, true);
    } else if (typeof vnode.type === 'string') {
      const props = vnode.props as Record<string, unknown>;
      for (const name of READ_ATTRIBUTES)
        if (typeof props[name] === 'string') props[name] = terminalSafe(props[name], true);
    }
    previous?.(vnode);
  };
}

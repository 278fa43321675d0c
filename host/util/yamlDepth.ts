/**
 * How deeply a YAML text nests, estimated from the text alone in one pass, before a parser sees it. The `yaml`
 * package parses nesting recursively: about 900 indented levels overflow its stack, and one line of 100 000 `- `
 * (200 KB, a sequence nested 100 000 deep) made Node abort out of memory building the error message. So a YAML
 * document from outside is measured first and refused when this is over the limit.
 *
 * The estimate counts, for each line, the indentation levels open above it (a stack of columns, including those
 * opened by block indicators on a line: `- - x`, `? `, `: `) and the flow brackets open at any point (`[`, `{` where
 * YAML takes them as indicators, outside quoted scalars and comments). Block scalars (`|`, `>`) are skipped. It may
 * exceed the real depth by a level or two (an indicator before a scalar), never fall short of it.
 */
export function yamlNestingDepth(text: string, limit: number): number {
  let deepest = 0;
  const indents: number[] = [];
  let flow = 0;
  let quote: '"' | "'" | undefined;
  /** Indentation of the line that opened a block scalar: its content lines are text, not structure. */
  let scalarParent: number | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const indent = line.length - line.trimStart().length;
    const content = line.slice(indent);
    if (scalarParent !== undefined) {
      if (content === '' || indent > scalarParent) continue;
      scalarParent = undefined;
    }
    if (content === '' || (content.startsWith('#') && flow === 0 && quote === undefined)) continue;
    let at = 0;
    let depth = 0;
    if (flow === 0 && quote === undefined) {
      while (indents.length > 0 && indents[indents.length - 1]! >= indent) indents.pop();
      indents.push(indent);
      // Block indicators open a collection on this very line (`- - - x`, `? - x`); what follows each starts at its
      // own column, which the lines under it are indented to (`- k:` then `    k2:` nests under `k`).
      for (let m = /^[-?:](?:[ \t]+|$)/.exec(content); m; m = /^[-?:](?:[ \t]+|$)/.exec(content.slice(at))) {
        at += m[0].length;
        indents.push(indent + at);
        if (at >= content.length) break;
      }
      depth = indents.length;
    }
    let lineFlowMax = flow;
    let last = at > 0 ? ' ' : '';
    // A quote opens a quoted scalar only where a scalar may start (line start, after `[`, `{`, `,` or `: `); in a
    // plain scalar (`it's`) it is a character. Seeing a quote where YAML sees none would hide what follows.
    let scalarMayStart = quote === undefined;
    let blockScalar = false;
    for (let i = at; i < content.length; i += 1) {
      const c = content[i]!;
      if (quote === '"') {
        if (c === '\\') i += 1;
        else if (c === '"') quote = undefined;
      } else if (quote === "'") {
        if (c === "'") {
          if (content[i + 1] === "'") i += 1;
          else quote = undefined;
        }
      } else if (c === ' ' || c === '\t') {
        // Whitespace keeps whether a scalar may start here.
      } else if (c === '#' && (i === 0 || last === ' ' || last === '\t')) {
        break;
      } else if ((c === '"' || c === "'") && scalarMayStart) {
        quote = c;
      } else if ((c === '|' || c === '>') && scalarMayStart && flow === 0) {
        // A block scalar header ends the line (`key: |`, `- >-`, `|2`): the lines under it are its text.
        if (/^[-+0-9]*[ \t]*(?:#.*)?$/.test(content.slice(i + 1))) blockScalar = true;
        break;
      } else if ((c === '[' || c === '{') && (flow > 0 || scalarMayStart)) {
        // In a block plain scalar (`a: x[`) a bracket is a character; in a flow collection always an indicator.
        flow += 1;
        if (flow > lineFlowMax) lineFlowMax = flow;
        scalarMayStart = true;
      } else if (c === ',' && flow > 0) {
        scalarMayStart = true;
      } else if ((c === ']' || c === '}') && flow > 0) {
        flow -= 1;
        scalarMayStart = false;
      } else if (
        c === ':' &&
        (i + 1 === content.length || /[ \t]/.test(content[i + 1]!) || (flow > 0 && (last === '"' || last === "'")))
      ) {
        // A value may start after `: `, and in a flow collection right after a quoted key (`{"a":"b"}`).
        scalarMayStart = true;
      } else if ((c === '!' || c === '&') && scalarMayStart) {
        // A tag or an anchor before a node: the node (a quote, a bracket) may still start after it.
        while (i + 1 < content.length && !/[ \t]/.test(content[i + 1]!)) i += 1;
      } else {
        scalarMayStart = false;
      }
      if (quote === undefined || c === '"' || c === "'") last = c;
    }
    depth += lineFlowMax;
    if (depth > deepest) deepest = depth;
    if (deepest > limit) return deepest;
    if (blockScalar) scalarParent = indent;
  }
  return deepest;
}

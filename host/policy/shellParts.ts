// Splitting a shell command into the simple commands it runs (docs/approvals.md §1), so each can be classified.
// A reader, not an interpreter: nothing is expanded or run. Anything it cannot take apart with confidence makes the
// whole text opaque, and an opaque text is never allowed by a rule or a grant.

/** What {@link splitCommand} found in a shell text. */
export interface SplitCommand {
  /** Each simple command's argv after quote removal, wrappers unwrapped; on opaque, what was read before. */
  parts: string[][];
  /** File redirections (`>`, `>>`, `<`, `&>`, …) with their target as written (quotes removed). */
  redirects: { op: string; path: string }[];
  /** The text could not be split with confidence: classify it as a whole, at high risk. */
  opaque: boolean;
  /** Why it is opaque. */
  why?: string;
  /**
   * Indexes into `parts` of commands that get more arguments at run time than the text shows (run by `xargs` or
   * `find -exec`): their operands are unknown, like a glob's.
   */
  fed?: number[];
}

/** Longest text split at all, in bytes; longer is opaque. */
export const MAX_COMMAND_BYTES = 64 * 1024;
/** Deepest nesting of subshells, substitutions and `sh -c` literals; deeper is opaque. */
export const MAX_NESTING = 16;

/** One word as read: its text after quote removal, and whether the shell would expand something in it. */
interface Word {
  text: string;
  raw: string;
  dynamic: boolean;
  /** Why the host cannot be sure what this word expands to (a parameter, a substitution, a brace sequence). */
  unsure?: string;
}

/** Thrown inside the reader only; {@link splitCommand} turns it into `opaque`. */
class Opaque extends Error {}

const BLANK = new Set([' ', '\t']);
/** Characters that end an unquoted word. */
const META = new Set([' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>']);
/** Reserved words that only introduce the command after them. */
const LEADING_KEYWORDS = new Set(['{', '!', 'if', 'then', 'else', 'elif', 'do', 'while', 'until']);
/** Reserved words that close a compound command (nothing runs by them). */
const CLOSING_KEYWORDS = new Set(['}', 'fi', 'done', 'esac']);
/** Compound headers whose words are not a command (their substitutions were already read as parts). */
const HEADERS = new Set(['for', 'select']);
/** Shells whose `-c <literal>` is split recursively. */
const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'ash']);
/** A leading `NAME=value` (or `NAME[i]=`, `NAME+=`) word: an assignment, not the command. */
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=/;

/**
 * Split a shell command into its simple commands (argv after quote removal), across `;`, `&&`, `||`, `|`, `&`,
 * newlines, subshells, groups, `$( … )`, backticks and process substitutions; unwraps transparent wrappers
 * (`sudo`, `env`, `timeout`, `xargs`, `sh -c '<literal>'`, …). Never throws.
 */
export function splitCommand(text: string): SplitCommand {
  if (typeof text !== 'string') return { parts: [], redirects: [], opaque: true, why: 'not a text' };
  if (text.length > MAX_COMMAND_BYTES || Buffer.byteLength(text) > MAX_COMMAND_BYTES)
    return { parts: [], redirects: [], opaque: true, why: `longer than ${MAX_COMMAND_BYTES} bytes` };
  const reader = new Reader(text, 0);
  try {
    reader.list(undefined);
    // Words whose expansion the host cannot know make the text opaque, but everything after them is still read.
    const why = reader.unsure;
    const split = why ? { opaque: true, why } : { opaque: false };
    return withFed({ parts: reader.parts, redirects: reader.redirects, ...split }, reader.fed);
  } catch (error) {
    // Anything unexpected (a bug here, a stack overflow) is opaque too: never a throw, never a clean split.
    const why = error instanceof Opaque ? error.message : 'the reader failed on this text';
    return withFed({ parts: reader.parts, redirects: reader.redirects, opaque: true, why }, reader.fed);
  }
}

/** The result with `fed` only when some part is fed. */
function withFed(split: SplitCommand, fed: number[]): SplitCommand {
  return fed.length > 0 ? { ...split, fed } : split;
}

/** A recursive-descent reader of one text; parts of nested lists and `sh -c` literals land in the same arrays. */
class Reader {
  pos = 0;
  readonly parts: string[][] = [];
  readonly redirects: { op: string; path: string }[] = [];
  readonly fed: number[] = [];
  /** The first reason the text is opaque that did not stop the reading (a word whose expansion is unknown). */
  unsure: string | undefined;
  /** Inside `find -exec`, or the command being unwrapped went through `xargs`. */
  private feeding = 0;
  private viaXargs = false;

  constructor(
    private readonly src: string,
    private depth: number,
  ) {}

  private fail(why: string): never {
    throw new Opaque(why);
  }

  private deeper<T>(fn: () => T): T {
    if (++this.depth > MAX_NESTING) this.fail(`nested deeper than ${MAX_NESTING}`);
    try {
      return fn();
    } finally {
      this.depth--;
    }
  }

  /** Read commands until `end` (consumed) or the end of the text; `end` undefined means the top level. */
  list(end: ')' | '`' | undefined): void {
    const src = this.src;
    let words: Word[] = [];
    let lastWordEnd = -1;
    const finish = () => {
      this.command(words);
      words = [];
    };
    for (;;) {
      while (this.pos < src.length && BLANK.has(src[this.pos]!)) this.pos++;
      if (this.pos >= src.length) {
        finish();
        if (end) this.fail(end === ')' ? 'unbalanced parenthesis' : 'unbalanced backtick');
        return;
      }
      const c = src[this.pos]!;
      const next = src[this.pos + 1];
      if (c === '#') {
        while (this.pos < src.length && src[this.pos] !== '\n') this.pos++;
      } else if (c === '\\' && next === '\n') {
        this.pos += 2;
      } else if (c === '\n' || c === ';' || c === '|' || (c === '&' && next !== '>')) {
        finish();
        this.pos += next === c || (c === '|' && next === '&') ? 2 : 1;
      } else if (c === ')') {
        if (end !== ')') this.fail('unbalanced parenthesis');
        finish();
        this.pos++;
        return;
      } else if (c === '`' && end === '`') {
        finish();
        this.pos++;
        return;
      } else if (c === '(') {
        if (words.length > 0) this.fail('"(" inside a command (a function definition or a syntax error)');
        this.pos++;
        this.deeper(() => this.list(')'));
      } else if ((c === '<' || c === '>' || c === '&') && next !== '(') {
        // An fd number written right before the operator (`2>`) belongs to the redirect, not the argv.
        const last = words.at(-1);
        if (last && lastWordEnd === this.pos && /^\d+$/.test(last.raw)) words.pop();
        this.redirect(end === '`');
      } else {
        words.push(this.word(end === '`'));
        lastWordEnd = this.pos;
      }
    }
  }

  /** Read one redirect operator and its target; here-documents are opaque, fd duplications are not files. */
  private redirect(inBacktick: boolean): void {
    const src = this.src;
    const ops = ['&>>', '<<<', '&>', '>>', '>|', '>&', '<&', '<>', '<<', '>', '<'];
    const op = ops.find((o) => src.startsWith(o, this.pos))!;
    if (op === '<<') this.fail('here-document');
    this.pos += op.length;
    while (this.pos < src.length && BLANK.has(src[this.pos]!)) this.pos++;
    if (this.pos >= src.length || META.has(src[this.pos]!)) this.fail(`redirect "${op}" without a target`);
    const target = this.word(inBacktick);
    // A here-string is data, not a file; `>&2`, `<&0`, `>&-` duplicate or close descriptors.
    if (op === '<<<') return;
    if ((op === '>&' || op === '<&') && /^(\d+|-)$/.test(target.text)) return;
    if (target.unsure) this.unsure ??= `${target.unsure} (a redirect target)`;
    this.redirects.push({ op, path: target.text });
  }

  /** Read one word (quotes removed, substitutions read as parts). */
  private word(inBacktick: boolean): Word {
    const src = this.src;
    const start = this.pos;
    let text = '';
    let dynamic = false;
    // The word's unquoted characters (quoted ones as `_`): brace expansion happens only there.
    let bare = '';
    // `<(…)` and `>(…)` start a word of their own: a process substitution, read as parts (it names a /dev/fd file).
    if ((src[this.pos] === '<' || src[this.pos] === '>') && src[this.pos + 1] === '(') {
      this.pos += 2;
      this.deeper(() => this.list(')'));
      return { text: src.slice(start, this.pos), raw: src.slice(start, this.pos), dynamic: true };
    }
    while (this.pos < src.length) {
      const c = src[this.pos]!;
      if (META.has(c)) break;
      if (c === '`' && inBacktick) break;
      if (c === '\\') {
        const n = src[this.pos + 1];
        if (n === '`' && inBacktick) this.fail('nested backticks');
        if (n === undefined) text += '\\';
        else if (n !== '\n') text += n;
        if (n !== '\n') bare += '_';
        this.pos += 2;
      } else if (c === "'") {
        const close = src.indexOf("'", this.pos + 1);
        if (close < 0) this.fail('unbalanced single quote');
        text += src.slice(this.pos + 1, close);
        bare += '_';
        this.pos = close + 1;
      } else if (c === '"') {
        const inner = this.doubleQuoted(inBacktick);
        text += inner.text;
        dynamic ||= inner.dynamic;
        bare += '_';
      } else if (c === '$' && src[this.pos + 1] === "'") {
        text += this.ansiC();
        bare += '_';
      } else if (c === '$' && src[this.pos + 1] === '"') {
        this.pos++;
        const inner = this.doubleQuoted(inBacktick);
        text += inner.text;
        dynamic ||= inner.dynamic;
        bare += '_';
      } else if (c === '$' || c === '`') {
        const from = this.pos;
        if (this.expansion()) {
          text += src.slice(from, this.pos);
          dynamic = true;
          bare += '_';
        } else {
          text += c;
          bare += c;
          this.pos++;
        }
      } else {
        text += c;
        bare += c;
        this.pos++;
      }
    }
    const word: Word = { text, raw: src.slice(start, this.pos), dynamic };
    const unsure = dynamic ? 'a word holds an expansion ($…, `…`) the host does not know' : braceUnsure(bare);
    if (unsure) word.unsure = unsure;
    return word;
  }

  /** Read a double-quoted string from its opening quote; backslash escapes only `$ \` " \\` and newline. */
  private doubleQuoted(inBacktick: boolean): { text: string; dynamic: boolean } {
    const src = this.src;
    this.pos++;
    let text = '';
    let dynamic = false;
    for (;;) {
      if (this.pos >= src.length) this.fail('unbalanced double quote');
      const c = src[this.pos]!;
      if (c === '"') {
        this.pos++;
        return { text, dynamic };
      }
      if (c === '\\') {
        const n = src[this.pos + 1];
        if (n === '`' && inBacktick) this.fail('nested backticks');
        if (n === '\n') this.pos += 2;
        else if (n === '$' || n === '`' || n === '"' || n === '\\') {
          text += n;
          this.pos += 2;
        } else {
          text += c;
          this.pos++;
        }
      } else if (c === '$' || c === '`') {
        if (c === '`' && inBacktick) this.fail('backtick inside double quotes inside backticks');
        const from = this.pos;
        if (this.expansion()) {
          text += src.slice(from, this.pos);
          dynamic = true;
        } else {
          text += c;
          this.pos++;
        }
      } else {
        text += c;
        this.pos++;
      }
    }
  }

  /** `$'…'`: ANSI-C quoting, the common escapes decoded (what it names matters for secret paths). */
  private ansiC(): string {
    const src = this.src;
    this.pos += 2;
    let text = '';
    const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', a: '\x07' };
    for (;;) {
      if (this.pos >= src.length) this.fail("unbalanced $'…' quote");
      const c = src[this.pos]!;
      if (c === "'") {
        this.pos++;
        return text;
      }
      if (c !== '\\') {
        text += c;
        this.pos++;
        continue;
      }
      const n = src[this.pos + 1] ?? '';
      const hex = /^x([0-9a-fA-F]{1,2})/.exec(src.slice(this.pos + 1, this.pos + 4));
      const oct = /^[0-7]{1,3}/.exec(src.slice(this.pos + 1, this.pos + 4));
      const uni = /^[uU]([0-9a-fA-F]{1,8})/.exec(src.slice(this.pos + 1, this.pos + 10));
      if (hex) {
        text += String.fromCharCode(parseInt(hex[1]!, 16));
        this.pos += 1 + hex[0].length;
      } else if (uni) {
        const code = parseInt(uni[1]!, 16);
        text += code <= 0x10ffff ? String.fromCodePoint(code) : '?';
        this.pos += 1 + uni[0].length;
      } else if (oct) {
        text += String.fromCharCode(parseInt(oct[0], 8) & 0xff);
        this.pos += 1 + oct[0].length;
      } else {
        text += simple[n] ?? `\\${n}`;
        this.pos += 2;
      }
    }
  }

  /**
   * At `$` or a backtick: read an expansion (substitutions as parts). False when the `$` is a literal dollar.
   * Arithmetic and `${…}` holding a command substitution are opaque rather than half-read.
   */
  private expansion(): boolean {
    const src = this.src;
    const c = src[this.pos];
    const n = src[this.pos + 1] ?? '';
    if (c === '`') {
      this.pos++;
      this.deeper(() => this.list('`'));
      return true;
    }
    if (n === '(' && src[this.pos + 2] === '(') {
      const close = this.balanced(this.pos + 1, '(', ')');
      const body = src.slice(this.pos + 3, close - 1);
      if (body.includes('$(') || body.includes('`')) this.fail('command substitution inside arithmetic');
      this.pos = close;
      return true;
    }
    if (n === '(') {
      this.pos += 2;
      this.deeper(() => this.list(')'));
      return true;
    }
    if (n === '{') {
      const close = this.balanced(this.pos + 1, '{', '}');
      const body = src.slice(this.pos + 2, close - 1);
      if (body.includes('$(') || body.includes('`')) this.fail('command substitution inside ${…}');
      this.pos = close;
      return true;
    }
    if (/[A-Za-z_]/.test(n)) {
      this.pos++;
      while (this.pos < src.length && /[A-Za-z0-9_]/.test(src[this.pos]!)) this.pos++;
      return true;
    }
    if (/[0-9@*#?$!-]/.test(n)) {
      this.pos += 2;
      return true;
    }
    return false;
  }

  /** Index just past the bracket that closes the one at `from` (quotes inside skipped); opaque when unbalanced. */
  private balanced(from: number, open: string, close: string): number {
    const src = this.src;
    let level = 0;
    for (let i = from; i < src.length; i++) {
      const c = src[i];
      if (c === '\\') i++;
      else if (c === "'") {
        i = src.indexOf("'", i + 1);
        if (i < 0) break;
      } else if (c === open) level++;
      else if (c === close && --level === 0) return i + 1;
    }
    this.fail(`unbalanced "${open}"`);
  }

  /** A simple command's words: assignments and keywords dropped, wrappers unwrapped, the argv recorded. */
  private command(input: Word[]): void {
    // When the host cannot be sure what a word expands to, it must not be read as harmless: the text is opaque.
    for (const w of input) if (w.unsure && !ASSIGNMENT.test(w.raw)) this.unsure ??= w.unsure;
    let words = input;
    for (;;) {
      const first = words[0];
      if (!first) return;
      const plain = first.raw === first.text && !first.dynamic;
      // The raw text decides: a quoted name (`'A=b' cmd`) is a command, `A=$(x) cmd` an assignment.
      if (ASSIGNMENT.test(first.raw)) {
        checkAssignment(first);
        words = words.slice(1);
      } else if (plain && LEADING_KEYWORDS.has(first.text)) words = words.slice(1);
      else if (plain && CLOSING_KEYWORDS.has(first.text)) words = words.slice(1);
      else if (plain && (HEADERS.has(first.text) || first.text === 'case')) return;
      else if (plain && first.text === 'function') this.fail('a function definition (its body runs later)');
      else break;
    }
    this.viaXargs = false;
    const argv = this.unwrap(words);
    if (!argv || argv.length === 0) return;
    const fed = this.viaXargs || this.feeding > 0;
    const name = baseName(argv[0]!.text);
    if (name === 'find') this.findExec(argv);
    if (fed) this.fed.push(this.parts.length);
    // Quotes removed, expansions kept as written (`"$X/.env"` is `$X/.env`: its base name is `.env`).
    this.parts.push(argv.map((w) => w.text));
  }

  /** Peel transparent wrappers until the real command; undefined when nothing runs (`exec` with redirects only). */
  private unwrap(input: Word[]): Word[] | undefined {
    let words = input;
    for (let round = 0; round < 64; round++) {
      const first = words[0];
      if (!first) return undefined;
      if (first.dynamic) this.fail('the command name is a variable or a substitution');
      // `{rm,-rf,/}` is `rm -rf /` after brace expansion: a name the reader does not expand.
      if (/\{[^}]*(,|\.\.)[^}]*\}/.test(first.raw)) this.fail('brace expansion in the command name');
      const name = baseName(first.text);
      const rest = words.slice(1);
      let next: Word[] | undefined;
      switch (name) {
        case 'eval':
          this.fail('eval');
          break;
        case 'source':
        case '.':
          this.fail(`${name} runs a file's commands`);
          break;
        case 'trap':
          this.fail('trap runs code later');
          break;
        case 'alias':
          this.fail('alias defines code a later command name runs');
          break;
        case 'coproc':
          this.fail('coproc (its command is not read)');
          break;
        case 'builtin':
          next = rest;
          break;
        case 'export':
        case 'declare':
        case 'typeset':
        case 'local':
        case 'readonly':
          // `export PATH=/tmp/x` chooses what the next commands run, as a prefix assignment does.
          for (const w of rest) if (ASSIGNMENT.test(w.raw)) checkAssignment(w);
          return words;
        case 'sudo':
        case 'doas':
          next = skipOptions(rest, 'ugpChDrtURTa', ['--user', '--group', '--prompt', '--chdir']);
          next = dropAssignments(next);
          break;
        case 'env': {
          if (
            leadingOptions(rest).some(
              (w) => w.text === '-S' || w.text.startsWith('--split-string') || /^-[^-]*S/.test(w.text),
            )
          )
            this.fail('env -S splits a string into a command');
          next = dropAssignments(skipOptions(rest, 'uC', ['--unset', '--chdir']));
          break;
        }
        case 'nice':
          next = skipOptions(
            rest.filter((w, i) => !(i === 0 && /^-\d+$/.test(w.text))),
            'n',
            ['--adjustment'],
          );
          break;
        case 'nohup':
        case 'setsid':
        case 'busybox':
          next = skipOptions(rest, '', []);
          break;
        case 'stdbuf':
          next = skipOptions(rest, 'ioe', ['--input', '--output', '--error']);
          break;
        case 'ionice':
          next = skipOptions(rest, 'cnp', ['--class', '--classdata', '--pid']);
          break;
        case 'watch':
        case 'parallel':
          this.fail(`${name} runs its arguments as shell text`);
          break;
        case 'su':
        case 'flock':
        case 'script':
          if (rest.some((w) => w.text === '--command' || /^-[A-Za-z]*c/.test(w.text)))
            this.fail(`${name} -c runs its argument as shell text`);
          return words;
        case 'timeout':
          next = skipOptions(rest, 'sk', ['--signal', '--kill-after']).slice(1);
          break;
        case 'time': {
          const out = optionValue(rest, 'o', '--output');
          if (out !== undefined) this.redirects.push({ op: '>', path: out });
          next = skipOptions(rest, 'fo', ['--format', '--output']);
          break;
        }
        case 'command':
          // `command -v x` only looks x up; a `-v` after the command name is that command's own option.
          if (leadingOptions(rest).some((w) => /^-[pvV]*[vV]/.test(w.text))) return words;
          next = skipOptions(rest, '', []);
          break;
        case 'exec':
          next = skipOptions(rest, 'a', []);
          if (next.length === 0) return undefined;
          break;
        case 'xargs': {
          this.viaXargs = true;
          next = skipOptions(rest, 'adEILnPs', [
            '--arg-file',
            '--delimiter',
            '--eof',
            '--replace',
            '--max-lines',
            '--max-args',
            '--max-procs',
            '--max-chars',
            '--process-slot-var',
          ]);
          // With no command, xargs runs echo.
          if (next.length === 0) return [{ text: 'echo', raw: 'echo', dynamic: false }];
          break;
        }
        default:
          if (SHELLS.has(name)) return this.shellC(words);
          return words;
      }
      // A wrapper with no command left runs something of its own (`sudo -s` a root shell reading stdin, `env` prints
      // the environment): it is the part, classified as what it is.
      if (next.length === 0) return words;
      words = next;
    }
    this.fail('too many wrappers');
  }

  /** `sh -c '<literal>'`: split the literal as commands of their own; a non-literal script is opaque. */
  private shellC(words: Word[]): Word[] | undefined {
    let hasC = false;
    let i = 1;
    for (; i < words.length; i++) {
      const w = words[i]!.text;
      if (w === '--') {
        i++;
        break;
      }
      if (w === '-o' || w === '+o' || w === '--rcfile' || w === '--init-file') i++;
      else if (/^[-+][A-Za-z]+$/.test(w)) hasC ||= w.includes('c');
      else if (!w.startsWith('--')) break;
    }
    if (!hasC) return words;
    const script = words[i];
    if (!script) this.fail(`${baseName(words[0]!.text)} -c without a script`);
    if (script.dynamic) this.fail(`${baseName(words[0]!.text)} -c of a non-literal script`);
    const inner = new Reader(script.text, this.depth + 1);
    if (inner.depth > MAX_NESTING) this.fail(`nested deeper than ${MAX_NESTING}`);
    try {
      inner.list(undefined);
    } finally {
      const offset = this.parts.length;
      this.parts.push(...inner.parts);
      this.redirects.push(...inner.redirects);
      this.fed.push(...inner.fed.map((i) => i + offset));
      this.unsure ??= inner.unsure;
    }
    return undefined;
  }

  /** `find … -exec cmd … ;` runs `cmd`: record it as a part of its own too. */
  private findExec(argv: Word[]): void {
    for (let i = 1; i < argv.length; i++) {
      if (!/^-(exec|execdir|ok|okdir)$/.test(argv[i]!.text)) continue;
      const start = i + 1;
      let stop = start;
      while (stop < argv.length && argv[stop]!.text !== ';' && argv[stop]!.text !== '+') stop++;
      if (this.feeding >= MAX_NESTING) this.fail(`find -exec nested deeper than ${MAX_NESTING}`);
      this.feeding++;
      try {
        this.command(argv.slice(start, stop));
      } finally {
        this.feeding--;
      }
      i = stop;
    }
  }
}

/** Most `{…,…}` lists in one word the classifier expands exactly (classify.ts `MAX_BRACE_LISTS`). */
const MAX_BRACE_LISTS = 6;

/**
 * Why the unquoted characters of a word (quoted ones as `_`) expand to words the host cannot list: a brace sequence
 * (`{a..z}`, `{1..9..2}`) or more brace lists than are expanded exactly. One pass, no backtracking.
 */
function braceUnsure(bare: string): string | undefined {
  if (!bare.includes('{')) return undefined;
  let open = -1;
  let lists = 0;
  let comma = false;
  for (let i = 0; i < bare.length; i++) {
    const c = bare[i];
    if (c === '{') {
      open = i;
      comma = false;
    } else if (c === ',' && open >= 0) comma = true;
    else if (c === '}' && open >= 0) {
      const body = bare.slice(open + 1, i);
      if (!comma && /^[^.]+\.\.[^.]+(\.\.[^.]+)?$/.test(body)) return 'a brace sequence ({a..z}) in a word';
      if (comma && ++lists > MAX_BRACE_LISTS) return `more than ${MAX_BRACE_LISTS} brace lists in a word`;
      open = -1;
    }
  }
  return undefined;
}

/** The last path segment of a command name (`/usr/bin/rm` → `rm`). */
export function baseName(name: string): string {
  const slash = name.lastIndexOf('/');
  return slash >= 0 && slash < name.length - 1 ? name.slice(slash + 1) : name;
}

/** The option words before a wrapper's first operand. */
function leadingOptions(words: Word[]): Word[] {
  const end = words.findIndex((w) => !w.text.startsWith('-') || w.text === '--');
  return end < 0 ? words : words.slice(0, end);
}

/**
 * Variables that choose what runs (a program's path, a preloaded library, a shell's start-up file, a pager, an
 * editor, git's helpers, an interpreter's start-up options; also `LD_*`, `DYLD_*`, `GIT_CONFIG*` and
 * `npm_config_*`): assigning one makes the commands it affects opaque.
 */
const RUNS_BY_VARIABLE = new Set([
  ...['PATH', 'BASH_ENV', 'ENV', 'IFS', 'SHELLOPTS', 'BASHOPTS', 'PROMPT_COMMAND', 'PS4', 'GIT_SSH', 'GIT_PAGER'],
  ...['GIT_SSH_COMMAND', 'GIT_EXTERNAL_DIFF', 'PAGER', 'MANPAGER', 'GIT_EDITOR', 'EDITOR', 'VISUAL', 'GIT_ASKPASS'],
  ...['SSH_ASKPASS', 'GIT_EXEC_PATH', 'GIT_PROXY_COMMAND', 'NODE_OPTIONS', 'PYTHONPATH', 'PYTHONSTARTUP', 'PERL5OPT'],
  ...['PERL5LIB', 'RUBYOPT', 'BROWSER', 'LESSOPEN', 'LESSCLOSE'],
]);

/** An assignment to a variable that chooses what runs is opaque (`cat` as a pager is not). */
function checkAssignment(word: Word): void {
  const eq = word.raw.indexOf('=');
  const name = word.raw.slice(0, eq).replace(/\[.*$/, '').replace(/\+$/, '');
  // `npm_config_*` (any case, as npm reads them) sets npm's options: `script_shell`, `node_options`, `userconfig`.
  if (!RUNS_BY_VARIABLE.has(name) && !/^(LD_|DYLD_|GIT_CONFIG)/.test(name) && !/^npm_config_/i.test(name)) return;
  if (/PAGER$/.test(name) && /^=(cat|'cat'|"cat")?$/.test(word.raw.slice(eq))) return;
  throw new Opaque(`${name} is assigned: it chooses what runs`);
}

/** Drop leading `VAR=value` words (quote-free names only). */
function dropAssignments(words: Word[]): Word[] {
  let i = 0;
  while (i < words.length && ASSIGNMENT.test(words[i]!.raw)) checkAssignment(words[i++]!);
  return words.slice(i);
}

/**
 * Skip a wrapper's options: `shortWithArg` letters take a value (attached or the next word), `longWithArg` long
 * options take one (after `=` or the next word); `--` ends options. Returns the words from the command on.
 */
function skipOptions(words: Word[], shortWithArg: string, longWithArg: string[]): Word[] {
  let i = 0;
  while (i < words.length) {
    const w = words[i]!.text;
    if (w === '--') return words.slice(i + 1);
    if (w === '-' && i === 0) {
      i++;
      continue;
    }
    if (w.startsWith('--')) {
      i += longWithArg.includes(w) ? 2 : 1;
      continue;
    }
    if (!w.startsWith('-') || w.length < 2) break;
    i++;
    for (let k = 1; k < w.length; k++) {
      if (!shortWithArg.includes(w[k]!)) continue;
      if (k === w.length - 1) i++;
      break;
    }
  }
  return words.slice(i);
}

/** The value of a wrapper option (`-o file`, `-ofile`, `--output=file`, `--output file`), if given. */
function optionValue(words: Word[], short: string, long: string): string | undefined {
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!.text;
    if (!w.startsWith('-') || w === '--') return undefined;
    if (w === long || w === `-${short}`) return words[i + 1]?.text;
    if (w.startsWith(`${long}=`)) return w.slice(long.length + 1);
    if (!w.startsWith('--') && w.startsWith(`-${short}`)) return w.slice(2);
  }
  return undefined;
}

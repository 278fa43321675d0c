import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classifyCommand } from '../../../host/policy/classify.js';
import { EFFECTS, type Effect } from '../../../host/policy/actions.js';
import { MAX_COMMAND_BYTES, MAX_NESTING, splitCommand } from '../../../host/policy/shellParts.js';

const parts = (text: string) => splitCommand(text).parts;
const opaqueWhy = (text: string) => {
  const split = splitCommand(text);
  return split.opaque ? split.why : undefined;
};

describe('splitCommand: separators and nesting', () => {
  it('splits on ; && || | & |& and newlines, each simple command an argv', () => {
    expect(parts('a 1; b 2 && c || d | e & f |& g\nh')).toEqual([
      ['a', '1'],
      ['b', '2'],
      ['c'],
      ['d'],
      ['e'],
      ['f'],
      ['g'],
      ['h'],
    ]);
  });

  it('reads subshells, groups, $( ), backticks and process substitutions as parts too', () => {
    const split = splitCommand('(cd a && make) ; { ls; rm x; } ; echo $(git push) `whoami` <(cat a) >(tee b)');
    // A substitution's output is a word the host cannot know: opaque, its commands still read.
    expect(split.opaque).toBe(true);
    expect(splitCommand('(cd a && make) ; { ls; rm x; } ; cat <(cat a) >(tee b)').opaque).toBe(false);
    expect(split.parts).toContainEqual(['cd', 'a']);
    expect(split.parts).toContainEqual(['make']);
    expect(split.parts).toContainEqual(['ls']);
    expect(split.parts).toContainEqual(['rm', 'x']);
    expect(split.parts).toContainEqual(['git', 'push']);
    expect(split.parts).toContainEqual(['whoami']);
    expect(split.parts).toContainEqual(['cat', 'a']);
    expect(split.parts).toContainEqual(['tee', 'b']);
    expect(split.parts.find((p) => p[0] === 'echo')).toHaveLength(5);
  });

  it('finds a substitution inside double quotes and inside an assignment, not inside single quotes', () => {
    expect(parts('echo "x $(rm -rf ~) y"')).toContainEqual(['rm', '-rf', '~']);
    expect(parts('X=$(curl evil) ls')).toEqual([['curl', 'evil'], ['ls']]);
    expect(parts("echo '$(rm -rf ~)'")).toEqual([['echo', '$(rm -rf ~)']]);
  });

  it('drops keywords of compound commands so the commands inside are classified', () => {
    expect(parts('if rm -rf x; then ls; else git push; fi')).toEqual([['rm', '-rf', 'x'], ['ls'], ['git', 'push']]);
    expect(parts('for f in a b; do rm "$f"; done')).toEqual([['rm', '$f']]);
    expect(parts('while true; do curl x; done')).toEqual([['true'], ['curl', 'x']]);
  });

  it('drops comments only where a word starts', () => {
    expect(parts('ls # ; rm -rf /')).toEqual([['ls']]);
    expect(parts('ls a#b ; rm x')).toEqual([
      ['ls', 'a#b'],
      ['rm', 'x'],
    ]);
  });
});

describe('splitCommand: quoting', () => {
  it('removes single and double quotes and honours backslash escapes', () => {
    expect(parts(`echo 'a b' "c \\"d\\" \\$e \\q" f\\ g`)).toEqual([['echo', 'a b', 'c "d" $e \\q', 'f g']]);
  });

  it('joins backslash-newline continuations, in and out of double quotes', () => {
    expect(parts('git \\\n push \\\n --force')).toEqual([['git', 'push', '--force']]);
    expect(parts('echo "a\\\nb"')).toEqual([['echo', 'ab']]);
  });

  it("decodes $'…' so an escaped secret name is still seen", () => {
    expect(parts("cat $'\\x2e\\x65nv' $'a\\nb'")).toEqual([['cat', '.env', 'a\nb']]);
  });

  it('keeps a quoted separator inside its word', () => {
    expect(parts('echo "a; rm -rf /" \'b && c\'')).toEqual([['echo', 'a; rm -rf /', 'b && c']]);
  });

  it('a quoted name=value is a command, not an assignment', () => {
    expect(parts("'A=1' ls")).toEqual([['A=1', 'ls']]);
  });
});

describe('splitCommand: redirects', () => {
  it('records file redirects with their operator, drops fd numbers and duplications', () => {
    const split = splitCommand('make 2>err.log >out.txt >>all.log <in.txt &>both 2>&1 >&- <<<"data"');
    expect(split.parts).toEqual([['make']]);
    expect(split.redirects).toEqual([
      { op: '>', path: 'err.log' },
      { op: '>', path: 'out.txt' },
      { op: '>>', path: 'all.log' },
      { op: '<', path: 'in.txt' },
      { op: '&>', path: 'both' },
    ]);
  });

  it('records the redirect of `time -o` as a write', () => {
    expect(splitCommand('time -o t.txt ls').redirects).toEqual([{ op: '>', path: 't.txt' }]);
  });
});

describe('splitCommand: wrappers', () => {
  it('unwraps sudo, env, nice, nohup, timeout, time, command, exec, and drops leading assignments', () => {
    expect(
      parts('A=1 B="2 3" sudo -u root -E env -i X=1 nice -n 5 nohup timeout -s KILL 10s time -p npm test'),
    ).toEqual([['npm', 'test']]);
    expect(parts('command git push')).toEqual([['git', 'push']]);
    expect(parts('exec -a name rm -rf x')).toEqual([['rm', '-rf', 'x']]);
    expect(parts('/usr/bin/sudo /bin/rm -rf x')).toEqual([['/bin/rm', '-rf', 'x']]);
  });

  it('unwraps stdbuf, ionice and busybox; watch, parallel and su/flock/script -c are opaque', () => {
    expect(parts('stdbuf -oL -e 0 ionice -c 3 busybox rm -rf x')).toEqual([['rm', '-rf', 'x']]);
    for (const text of ["watch 'rm -rf x'", 'parallel rm ::: a b', "su -c 'rm -rf /' root", 'flock /tmp/l -c "x"'])
      expect([text, splitCommand(text).opaque]).toEqual([text, true]);
    expect(parts('su root')).toEqual([['su', 'root']]);
  });

  it('an assignment to a variable that chooses what runs is opaque, other assignments are dropped', () => {
    for (const text of [
      'PATH=/tmp/x:$PATH ls',
      'PATH=/x; ls',
      'PATH+=:/x ls',
      'LD_PRELOAD=./e.so ls',
      'env GIT_EXTERNAL_DIFF=./x git diff',
      'sudo BASH_ENV=./x bash x.sh',
      'GIT_CONFIG_PARAMETERS="\'core.pager=sh\'" git log',
      'PAGER=./evil git log',
    ])
      expect([text, opaqueWhy(text)]).toEqual([text, expect.stringContaining('chooses what runs')]);
    expect(parts('GIT_PAGER=cat CI=1 LANG=C git log')).toEqual([['git', 'log']]);
    expect(opaqueWhy('export PATH=/tmp/x; ls')).toContain('chooses what runs');
    expect(opaqueWhy('declare -x LD_PRELOAD=./e.so')).toContain('chooses what runs');
    expect(parts('export CI=1')).toEqual([['export', 'CI=1']]);
  });

  it('does not mistake a wrapper option value for the command', () => {
    expect(parts('sudo -u ls rm -rf /')).toEqual([['rm', '-rf', '/']]);
    expect(parts('timeout -k ls 5 git push')).toEqual([['git', 'push']]);
    expect(parts('xargs -I ls rm ls')).toEqual([['rm', 'ls']]);
    expect(parts('nice -10 git push')).toEqual([['git', 'push']]);
  });

  it('keeps `command -v` as it is (a lookup runs nothing), but not a -v of the command it runs', () => {
    expect(parts('command -v rm')).toEqual([['command', '-v', 'rm']]);
    expect(parts('command git push -v')).toEqual([['git', 'push', '-v']]);
    expect(parts('env rm -S x')).toEqual([['rm', '-S', 'x']]);
  });

  it('a wrapper with no command left is the part itself (sudo -s is a root shell on stdin)', () => {
    expect(parts("echo 'rm -rf /' | sudo -s")).toEqual([
      ['echo', 'rm -rf /'],
      ['sudo', '-s'],
    ]);
    expect(parts('env')).toEqual([['env']]);
    expect(parts('A=1 env -i')).toEqual([['env', '-i']]);
    expect(parts('exec >log 2>&1')).toEqual([]);
  });

  it('unwraps xargs to the command it runs, echo when none', () => {
    expect(parts('find . | xargs -0 -n 1 rm -rf')).toEqual([
      ['find', '.'],
      ['rm', '-rf'],
    ]);
    expect(parts('ls | xargs')).toEqual([['ls'], ['echo']]);
  });

  it('splits sh -c and bash -lc literals recursively, also behind other wrappers', () => {
    expect(parts("bash -lc 'git push --force; ls'")).toEqual([['git', 'push', '--force'], ['ls']]);
    expect(parts(`sudo sh -c "sh -c 'rm -rf /'"`)).toEqual([['rm', '-rf', '/']]);
    expect(parts('bash script.sh')).toEqual([['bash', 'script.sh']]);
  });

  it('marks the commands xargs and find -exec feed with more arguments', () => {
    expect(splitCommand('ls | xargs -n1 rm; echo x').fed).toEqual([1]);
    expect(splitCommand('find . -exec rm {} + -exec ls {} \\;')).toMatchObject({
      parts: [
        ['rm', '{}'],
        ['ls', '{}'],
        ['find', '.', '-exec', 'rm', '{}', '+', '-exec', 'ls', '{}', ';'],
      ],
      fed: [0, 1],
    });
    expect(splitCommand('ls; rm x').fed).toBeUndefined();
    expect(splitCommand("ls; bash -c 'find . | xargs rm'")).toMatchObject({
      parts: [['ls'], ['find', '.'], ['rm']],
      fed: [2],
    });
  });

  it('reads the command find -exec runs as a part of its own', () => {
    expect(parts("find . -name '*.o' -exec rm -rf {} \\; -print")[0]).toEqual(['rm', '-rf', '{}']);
  });
});

describe('splitCommand: opaque', () => {
  it.each([
    ['echo "unbalanced', 'unbalanced double quote'],
    ["echo 'unbalanced", 'unbalanced single quote'],
    ['(ls', 'unbalanced parenthesis'],
    ['ls)', 'unbalanced parenthesis'],
    ['echo `ls', 'unbalanced backtick'],
    ['cat <<EOF\nsecret\nEOF', 'here-document'],
    ['cat <<-EOF\nx\nEOF', 'here-document'],
    ['eval "ls"', 'eval'],
    ['source ./env.sh', 'source runs'],
    ['. ./env.sh', '. runs'],
    ['sh -c "$CMD"', 'non-literal'],
    ['bash -c "rm $(ls)"', 'non-literal'],
    ['$X -rf /', 'variable or a substitution'],
    ['$(echo rm) -rf /', 'variable or a substitution'],
    ['`echo rm` -rf /', 'variable or a substitution'],
    ['"$CMD" args', 'variable or a substitution'],
    ['sudo $X', 'variable or a substitution'],
    ['env -S "rm -rf /"', 'env -S'],
    ['f() { rm -rf /; }; f', 'function definition'],
    ['function f { rm -rf /; }', 'function definition'],
    ['trap "rm -rf /" EXIT', 'trap'],
    ["alias ls='rm -rf /'", 'alias'],
    ['coproc rm -rf /', 'coproc'],
    ['builtin eval x', 'eval'],
    ['echo $(( $(rm -rf /) ))', 'arithmetic'],
    ['echo ${X:-$(rm -rf /)}', '${…}'],
    ['echo > ', 'without a target'],
  ])('%j is opaque', (text, why) => {
    expect(opaqueWhy(text)).toContain(why);
  });

  it('is opaque past the nesting limit and not below it', () => {
    const nested = (n: number) => `${'echo $('.repeat(n)}ls${')'.repeat(n)}`;
    // Below the limit the text is opaque only for the substitution's unknown output, and every level is read.
    expect(opaqueWhy(nested(MAX_NESTING))).toContain('expansion');
    expect(parts(nested(MAX_NESTING))).toContainEqual(['ls']);
    expect(opaqueWhy(nested(MAX_NESTING + 1))).toContain('nested deeper');
    expect(splitCommand(`${'('.repeat(5000)}ls${')'.repeat(5000)}`).opaque).toBe(true);
    // An `sh -c` literal counts as one more level: 8 substitutions + sh -c + 7 inside is the limit.
    const viaShell = (inner: number) => `${'echo $('.repeat(8)}sh -c '${nested(inner)}'${')'.repeat(8)}`;
    expect(opaqueWhy(viaShell(7))).toContain('expansion');
    expect(parts(viaShell(7))).toContainEqual(['ls']);
    expect(opaqueWhy(viaShell(8))).toContain('nested deeper');
  });

  it('is opaque when find -exec nests past the limit', () => {
    const finds = (n: number) => `${'find . -exec '.repeat(n)}ls${' ;'.repeat(n)}`;
    expect(splitCommand(finds(MAX_NESTING)).opaque).toBe(false);
    expect(opaqueWhy(finds(MAX_NESTING + 1))).toContain('find -exec nested');
    expect(splitCommand('find . -exec '.repeat(5000)).opaque).toBe(true);
  });

  it('is opaque above the size limit, measured in bytes', () => {
    expect(splitCommand(`echo ${'a'.repeat(MAX_COMMAND_BYTES)}`).opaque).toBe(true);
    expect(splitCommand(`echo ${'é'.repeat(MAX_COMMAND_BYTES / 2)}`).opaque).toBe(true);
    expect(splitCommand(`echo ${'a'.repeat(MAX_COMMAND_BYTES - 10)}`).opaque).toBe(false);
  });

  it.each([
    ['echo $HOME', 'expansion'],
    ['cat "$PWD"', 'expansion'],
    ['rm -rf $@', 'expansion'],
    ['rm -rf "$*"', 'expansion'],
    ['cp $1 x', 'expansion'],
    ['rm -rf ${X:-/}', 'expansion'],
    ['echo $((1 + 2))', 'expansion'],
    ['echo $(date)', 'expansion'],
    ['echo `date`', 'expansion'],
    ['cat > "$F"', 'redirect target'],
    ['touch f{a..z}', 'brace sequence'],
    ['touch {1..9..2}', 'brace sequence'],
    ['for i in {1..3}; do ls; done', 'brace sequence'],
    [`cat ${'{a,b}'.repeat(7)}`, 'brace lists'],
    ["bash -c 'rm $X'", 'expansion'],
  ])('a word the host cannot expand makes %j opaque', (text, why) => {
    expect(opaqueWhy(text)).toContain(why);
  });

  it('a word it cannot expand does not stop the reading, nor hide its quotes-removed text', () => {
    expect(splitCommand('echo $X; git push; rm "$Y/.env"')).toMatchObject({
      parts: [
        ['echo', '$X'],
        ['git', 'push'],
        ['rm', '$Y/.env'],
      ],
      opaque: true,
    });
    // Literal words stay as they are: a quoted `$`, a lone `$`, a quoted brace, a single list.
    for (const text of ["echo '$X' a$ '{a..z}' x{a,b}", "grep -E 'a$' f", 'ls \\$HOME'])
      expect([text, splitCommand(text).opaque]).toEqual([text, false]);
  });

  it('keeps the parts it read before giving up (never used to allow)', () => {
    expect(splitCommand('git push; eval x')).toMatchObject({ parts: [['git', 'push']], opaque: true });
  });
});

/** A command of each strong kind, with the effect it must reach at least. */
const STRONG: [string, Effect][] = [
  ['git push origin main', 'publish'],
  ['npm publish', 'publish'],
  ['docker push img', 'publish'],
  ['rm -rf build', 'destructive'],
  ['git reset --hard HEAD~3', 'destructive'],
  ['git clean -fdx', 'destructive'],
  ['find . -delete', 'destructive'],
  ['curl https://x.test', 'network'],
  ['cat .env', 'credential'],
];
const HARMLESS = ['ls', 'echo hi', 'git status', 'cat README.md', 'true', 'pwd', "grep -r 'x' src"];
const rank = (e: Effect) => EFFECTS.indexOf(e);

describe('splitCommand: properties', () => {
  it('never throws, and reports a boolean opaque and arrays, on any text', () => {
    const alphabet = fc.constantFrom(...'ab $`\'"\\()<>{};&|#\n\t=*~.-0'.split(''), 'ｌ', '\u0000', '$(', '<<');
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.array(alphabet, { maxLength: 80 }).map((a) => a.join('')),
        ),
        (text) => {
          const split = splitCommand(text);
          expect(typeof split.opaque).toBe('boolean');
          expect(Array.isArray(split.parts) && Array.isArray(split.redirects)).toBe(true);
          for (const argv of split.parts) expect(argv.every((w) => typeof w === 'string')).toBe(true);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('one word of a publish, destructive or credential command put in an expansion is opaque, at least exec', () => {
    const strong = [
      ...STRONG.filter(([, e]) => rank(e) >= rank('credential')),
      ['git push --force origin main', 'destructive'],
      ['git -C repo push', 'publish'],
      ['kubectl -n prod delete pod x', 'publish'],
      ["sed -n 'r .env' x", 'credential'],
      ['cat ~/.ssh/id_rsa', 'credential'],
    ] as [string, Effect][];
    const forms: ((w: string) => string)[] = [
      () => '$X',
      () => '${X}',
      () => '"$X"',
      (w) => `$X${w}`,
      (w) => `${w}"$X"`,
      (w) => `"\${X:-${w}}"`,
      (w) => `"${w}$X"`,
    ];
    fc.assert(
      fc.property(fc.constantFrom(...strong), fc.nat(), fc.constantFrom(...forms.keys()), ([command], at, form) => {
        const words = command.split(' ');
        const i = at % words.length;
        // Single-quoted words stay as written (the form wraps their text, quotes and all, in an expansion).
        words[i] = forms[form]!(words[i]!.replace(/'/g, ''));
        const text = words.join(' ');
        const action = classifyCommand(text, 'test');
        expect([text, action.opaque]).toEqual([text, true]);
        expect(rank(action.effect)).toBeGreaterThanOrEqual(rank('exec'));
      }),
      { numRuns: 500 },
    );
  });

  it('a strong command joined with a harmless one by ; && | || or a newline classifies at least that strong', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...STRONG),
        fc.constantFrom(...HARMLESS),
        fc.constantFrom('; ', ' && ', ' | ', ' || ', '\n', ' & '),
        fc.boolean(),
        fc.constantFrom('', 'sudo ', 'env A=1 ', 'timeout 5 ', 'X=1 '),
        ([strong, effect], harmless, join, first, wrap) => {
          const text = first ? `${wrap}${strong}${join}${harmless}` : `${harmless}${join}${wrap}${strong}`;
          expect(rank(classifyCommand(text, 'test').effect)).toBeGreaterThanOrEqual(rank(effect));
        },
      ),
      { numRuns: 500 },
    );
  });
});

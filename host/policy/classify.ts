// The host's classification of what a run wants (docs/approvals.md §1). A runner's or harness's claim is only ever
// raised by it, never lowered: the stronger of claim and classification is what rules and grants see.
import { EFFECTS, type Action, type Effect } from './actions.js';
import { normalDomain, segmentMatch } from './globMatch.js';
import { baseName, splitCommand } from './shellParts.js';

/** The stronger of some effects (later in {@link EFFECTS}); `fs.read` for none. */
export function strongest(...effects: Effect[]): Effect {
  let best = 0;
  for (const e of effects) best = Math.max(best, EFFECTS.indexOf(e));
  return EFFECTS[best]!;
}

/**
 * A path with `.` and `..` resolved lexically (links are the caller's), duplicate slashes and a trailing slash
 * dropped. A `..` that would climb above a relative start or a `~` stays; above `/` it is dropped, as the kernel does.
 */
export function normalizePath(path: string): string {
  const absolute = path.startsWith('/');
  const out: string[] = [];
  for (const seg of path.split('/')) {
    if (seg === '' || seg === '.') continue;
    const last = out.at(-1);
    if (seg !== '..') out.push(seg);
    else if (last !== undefined && last !== '..' && !(out.length === 1 && last.startsWith('~'))) out.pop();
    else if (!absolute) out.push('..');
  }
  const joined = out.join('/');
  return absolute ? `/${joined}` : joined === '' ? '.' : joined;
}

/**
 * Is this a secret path? After lexical normalisation, compared case-insensitively (a `.ENV` or `.SSH` is flagged
 * too: over-asking is the safe side). The list:
 * - `.env`, `.env.*` (any folder; `.env.example` included, as its name cannot prove it holds no secret)
 * - anything in or under a `.ssh` folder (`~/.ssh/**`, wherever the home is), `id_rsa*`, `id_dsa*`, `id_ecdsa*`,
 *   `id_ed25519*`
 * - `.envrc` (direnv: exported tokens)
 * - `*.pem`, `*.key`, `*.p12`, `*.pfx`, `*.jks`, `*.keystore`, `*.ppk`, `*.tfstate` (and `*.tfstate.backup`)
 * - `.netrc`, `_netrc`, `.npmrc`, `.pypirc`, `.pgpass`, `.git-credentials`, `.vault-token`, `.dockercfg`,
 *   `.s3cfg`, `.boto`, `credentials.toml`
 * - `.aws/credentials`, `.aws/config`, `.kube/config`, `.docker/config.json`, `.cargo/credentials`,
 *   `.m2/settings.xml`, `.gradle/gradle.properties`, `.terraform.d/credentials.tfrc.json`, `.config/gh/hosts.yml`
 * - anything in or under `.config/gcloud`, `.azure`, `.gnupg`, `/var/run/secrets` or `/run/secrets` (Kubernetes
 *   service-account tokens, Docker secrets)
 * - `/proc/<pid>/environ` (a process's environment holds its tokens)
 */
export function isSecretPath(path: string): boolean {
  if (typeof path !== 'string' || path === '') return false;
  const segs = normalizePath(path.toLowerCase()).split('/');
  const base = segs.at(-1) ?? '';
  const parent = segs.at(-2) ?? '';
  if (base === '.env' || base.startsWith('.env.') || base === '.envrc') return true;
  if (segs.includes('.ssh') || segs.includes('.azure') || segs.includes('.gnupg')) return true;
  if (segs[0] === '' && segs[1] === 'proc' && base === 'environ') return true;
  // `/var/run/secrets/**`, `/run/secrets/**` (`/var/run` is a link to `/run`).
  const run = segs[1] === 'var' ? 2 : 1;
  if (segs[0] === '' && segs[run] === 'run' && segs[run + 1] === 'secrets') return true;
  if (/^id_(rsa|dsa|ecdsa|ed25519)/.test(base)) return true;
  if (/\.(pem|key|p12|pfx|jks|keystore|ppk|tfstate)$/.test(base) || base.endsWith('.tfstate.backup')) return true;
  if (SECRET_BASES.includes(base)) return true;
  const pair = `${parent}/${base}`;
  if (SECRET_PAIRS.includes(pair)) return true;
  if (pair === 'gh/hosts.yml' && segs.at(-3) === '.config') return true;
  return segs.some((s, i) => s === '.config' && segs[i + 1] === 'gcloud');
}

/** Secret files by their name alone. */
const SECRET_BASES = ['.netrc', '_netrc', '.npmrc', '.pypirc', '.pgpass', '.git-credentials', '.vault-token'];
SECRET_BASES.push('.dockercfg', '.s3cfg', '.boto', 'credentials.toml');
/** Secret files by their folder and name. */
const SECRET_PAIRS = ['.aws/credentials', '.aws/config', '.kube/config', '.docker/config.json', '.cargo/credentials'];
SECRET_PAIRS.push('.m2/settings.xml', '.gradle/gradle.properties', '.terraform.d/credentials.tfrc.json');

/** Names a glob segment may expand to that make a path secret (by {@link isSecretPath}'s list). */
const SECRET_NAMES = ['.env', '.env.x', '.ssh', 'id_rsa', 'id_ed25519', 'k.pem', 'k.key', 'k.p12', 'k.pfx', '.netrc'];
SECRET_NAMES.push('.npmrc', '.pypirc', '.pgpass', '.git-credentials', '.aws', '.azure', '.kube', '.docker', '.config');
SECRET_NAMES.push('.envrc', '.gnupg', 'k.jks', 'k.keystore', 'k.ppk', 'x.tfstate', '.vault-token', '.dockercfg');
SECRET_NAMES.push('.s3cfg', '.boto', 'credentials.toml', '.cargo', '.m2', '.gradle', '.terraform.d', 'secrets');
/** Secret files a folder may hold by a fixed name (a wildcard-only last segment under it may name them). */
const SECRET_FILES = ['credentials', 'config', 'config.json', 'settings.xml', 'gradle.properties', 'hosts.yml'];
SECRET_FILES.push('credentials.tfrc.json', 'credentials.toml');

/**
 * Could a glob name a secret path (`.e*`, `*.pem`, `'*.env'`, `~/.ss?/*`)? A `*` may match a leading dot here
 * (`find -name`, git pathspecs and `grep --include` do, unlike the shell). A segment that is wildcards only (`*`,
 * `??`) is not counted: it would make every `ls *` a credential read.
 */
export function globMayNameSecret(glob: string): boolean {
  if (!/[*?[]/.test(glob)) return false;
  // `~/.aws/*`: a wildcard-only last segment under a folder that holds a secret file by a fixed name.
  const segs = glob.split('/');
  if (segs.length > 1 && /^[*?]+$/.test(segs.at(-1) ?? '')) {
    const folder = segs.slice(0, -1).join('/');
    if (SECRET_FILES.some((name) => isSecretPath(`${folder}/${name}`))) return true;
  }
  return glob
    .toLowerCase()
    .split('/')
    .some((seg) => {
      if (!/[*?[]/.test(seg) || !/[^*?[\]]/.test(seg)) return false;
      // `[` classes are read as any one character: wider, never narrower.
      const pattern = seg.replace(/\[[^\]]*\]/g, '?');
      return SECRET_NAMES.some((n) => segmentMatch(pattern, n));
    });
}

/** Is a normalised path value inside the workspace: relative, not climbing out, not `~`, nothing left to expand? */
export function isInsidePath(value: string): boolean {
  if (value.startsWith('/') || value.startsWith('~') || /[$`]/.test(value)) return false;
  const n = normalizePath(value);
  return n !== '..' && !n.startsWith('../');
}

/** The root, normalised and absolute, or undefined when not usable. */
function rootOf(workspaceRoot: string | undefined): string | undefined {
  if (!workspaceRoot || !workspaceRoot.startsWith('/')) return undefined;
  return normalizePath(workspaceRoot);
}

/** A path as actions name it: workspace-relative when under the root, absolute otherwise (`~` paths kept). */
export function actionPath(path: string, workspaceRoot?: string): string {
  const root = rootOf(workspaceRoot);
  if (!root || path.startsWith('~') || (!path.startsWith('/') && isInsidePath(path))) return normalizePath(path);
  const full = normalizePath(path.startsWith('/') ? path : `${root}/${path}`);
  if (full === root) return '.';
  const prefix = root === '/' ? '/' : `${root}/`;
  return full.startsWith(prefix) ? full.slice(prefix.length) : full;
}

/**
 * Classify a file access: the path normalised; a secret path is `credential` whatever was claimed, a write into a
 * `.git` folder (hooks, config, …) is `exec`.
 */
export function classifyPath(
  path: string,
  claimed: 'fs.read' | 'fs.write',
  via: string,
  workspaceRoot?: string,
): Action {
  const value = actionPath(path, workspaceRoot);
  // Writing into `.git` (a hook, the config, where git finds them) is running code the next time git runs.
  const effect = isSecretPath(value) ? 'credential' : claimed === 'fs.write' && runsLater(value) ? 'exec' : claimed;
  return { effect, target: { kind: 'path', value }, via };
}

/** Commands that only read (or print) when used without the options checked in {@link argvEffect}. */
const READ_ONLY = new Set([
  ...['ls', 'cat', 'head', 'tail', 'grep', 'egrep', 'fgrep', 'rg', 'ag', 'wc', 'pwd', 'echo', 'printf', 'which'],
  ...['whereis', 'type', 'stat', 'du', 'df', 'tree', 'file', 'cut', 'tr', 'diff', 'cmp', 'comm', 'basename'],
  ...['dirname', 'realpath', 'readlink', 'whoami', 'id', 'uname', 'true', 'false', 'test', '[', '[[', ':', 'nl'],
  ...['od', 'hexdump', 'md5sum', 'sha1sum', 'sha256sum', 'sha512sum', 'jq', 'cd', 'pushd', 'popd', 'column'],
  ...['seq', 'sleep', 'nproc', 'uptime', 'date', 'command', 'sort', 'uniq', 'hostname', 'find'],
]);
const WRITES = new Set(['mv', 'cp', 'mkdir', 'touch', 'ln', 'install', 'tee', 'rmdir', 'unlink', 'patch', 'chmod']);
for (const w of ['chown', 'chgrp', 'tar', 'unzip', 'gunzip', 'gzip', 'zip', 'bunzip2', 'xz', 'rsync']) WRITES.add(w);
const NETWORK = new Set(['curl', 'wget', 'ssh', 'scp', 'sftp', 'nc', 'ncat', 'netcat', 'telnet', 'ftp', 'socat']);
for (const n of ['ping', 'dig', 'nslookup', 'host', 'whois', 'http', 'https', 'aria2c', 'aws', 'gcloud', 'az'])
  NETWORK.add(n);
const PACKAGE_MANAGERS = new Set(['npm', 'yarn', 'pnpm', 'bun']);
const INSTALLS = new Set(['install', 'i', 'add', 'ci', 'uninstall', 'remove', 'rm', 'update', 'up', 'upgrade']);
for (const i of ['link', 'dedupe', 'prune']) INSTALLS.add(i);

/** An option cluster (`-rf`, `-Rv`) or a long option (or its prefix) naming one of `letters` / `long`. */
function hasFlag(args: string[], letters: string, long: string[] = []): boolean {
  return args.some(
    (a) =>
      // GNU and git options take any unambiguous prefix (`--recu`, `--har`): a prefix counts as the option.
      long.some((l) => a === l || a.startsWith(`${l}=`) || (a.length >= 4 && !a.includes('=') && l.startsWith(a))) ||
      // A short cluster may end in an attached value (`-o/etc/x`): its letters are read up to the first other sign.
      [...(/^-([A-Za-z0-9]+)/.exec(a)?.[1] ?? '')].some((c) => letters.includes(c)),
  );
}

/** The words that are no option (`-x`, `--x`, `--x=y`). */
function positionals(args: string[]): string[] {
  return args.filter((a) => !a.startsWith('-'));
}

/** The effect of one simple command, before secret paths are looked at. */
export function argvEffect(argv: string[], fed = false): Effect {
  const name = baseName(argv[0] ?? '');
  const args = argv.slice(1);
  const pos = positionals(args);
  if (/^deploy/i.test(name)) return 'publish';
  if (name === 'git') return gitEffect(args);
  if (PACKAGE_MANAGERS.has(name)) {
    // npm takes `pub` (and other unambiguous prefixes) for publish.
    if (pos.some((p) => ['unpublish', 'deprecate'].includes(p) || (p.length >= 3 && 'publish'.startsWith(p))))
      return 'publish';
    if ((pos[0] === 'run' || pos[0] === 'run-script') && /^deploy/i.test(pos[1] ?? '')) return 'publish';
    if (name !== 'npm' && /^deploy/i.test(pos[0] ?? '')) return 'publish';
    return INSTALLS.has(pos[0] ?? '') ? 'fs.write' : 'exec';
  }
  switch (name) {
    case 'make':
      return pos.some((p) => /^deploy/i.test(p)) ? 'publish' : 'exec';
    case 'docker':
    case 'podman':
      return dockerEffect(args);
    case 'mvn':
    case 'mvnw':
      return pos.some((p) => /^(deploy|release:perform)$|:deploy(-file)?$/.test(p)) ? 'publish' : 'exec';
    case 'gradle':
    case 'gradlew':
      // Gradle runs a task by a unique prefix (`pub`) too.
      return pos.some((p) => /^(publish|upload)/i.test(p) || (p.length >= 3 && 'publish'.startsWith(p)))
        ? 'publish'
        : 'exec';
    case 'gh':
      if ((pos[0] === 'release' && pos[1] === 'create') || (pos[0] === 'pr' && pos[1] === 'merge')) return 'publish';
      return pos[1] === 'delete' ? 'destructive' : 'network';
    case 'twine':
      return pos[0] === 'upload' ? 'publish' : 'exec';
    case 'cargo':
      return pos[0] === 'publish' || pos[0] === 'yank' ? 'publish' : 'exec';
    case 'gem':
      return pos[0] === 'push' ? 'publish' : 'exec';
    case 'poetry':
    case 'flit':
    case 'hatch':
      return pos[0] === 'publish' ? 'publish' : 'exec';
    case 'kubectl': {
      const sub = args[subcommandAt(args, 'nsv', KUBECTL_GLOBALS)] ?? '';
      return ['apply', 'delete', 'create', 'replace', 'patch', 'scale', 'rollout', 'edit', 'set'].includes(sub)
        ? 'publish'
        : 'network';
    }
    case 'terraform':
    case 'tofu':
      return ['apply', 'destroy', 'import'].includes(pos[0] ?? '') ? 'publish' : 'network';
    case 'helm': {
      const sub = args[subcommandAt(args, 'n', HELM_GLOBALS)] ?? '';
      return ['install', 'upgrade', 'uninstall', 'rollback', 'push', 'delete'].includes(sub) ? 'publish' : 'network';
    }
    case 'rm':
      // Many operands or a glob can take more than the author saw; recursion takes a tree.
      // Operands the text does not show (xargs, `$files`, a glob) count as many.
      if (hasFlag(args, 'rR', ['--recursive']) || pos.length > 20 || fed || pos.some((p) => /[*?[$`]/.test(p)))
        return 'destructive';
      return 'fs.write';
    case 'truncate':
    case 'shred':
    case 'wipefs':
      return 'destructive';
    case 'dd':
      return args.some((a) => a.startsWith('of=')) ? 'destructive' : 'exec';
    case 'chmod':
    case 'chown':
    case 'chgrp':
      return hasFlag(args, 'R', ['--recursive']) ? 'destructive' : 'fs.write';
    case 'find':
      if (args.includes('-delete')) return 'destructive';
      if (args.some((a) => /^-(exec|execdir|ok|okdir)$/.test(a))) return 'exec';
      if (args.some((a) => /^-f(print|print0|printf|ls)$/.test(a))) return 'fs.write';
      return 'fs.read';
    case 'sed':
    case 'gsed':
      return hasFlag(args, 'i', ['--in-place']) ? 'fs.write' : 'exec';
    case 'rsync':
      return args.some((a) => !a.startsWith('-') && /^([^/]*:|rsync:\/\/)/.test(a)) ? 'network' : 'fs.write';
    case 'sort':
      if (args.some((a) => a.startsWith('--compress-prog'))) return 'exec';
      return hasFlag(args, 'o', ['--output']) ? 'fs.write' : 'fs.read';
    case 'uniq':
      return pos.length > 1 ? 'fs.write' : 'fs.read';
    case 'tree':
      return args.includes('-o') ? 'fs.write' : 'fs.read';
    case 'rg':
      return args.some((a) => a === '--pre' || a.startsWith('--pre=')) ? 'exec' : 'fs.read';
    case 'date':
      return hasFlag(args, 's', ['--set']) ? 'exec' : 'fs.read';
    case 'printf':
      // `printf -v PATH …` assigns a variable, one that may choose what runs.
      return hasFlag(args, 'v') ? 'exec' : 'fs.read';
    case 'hostname':
      return pos.length > 0 ? 'exec' : 'fs.read';
  }
  if (/^mkfs/.test(name)) return 'destructive';
  if (NETWORK.has(name)) return 'network';
  if (WRITES.has(name)) return 'fs.write';
  if (READ_ONLY.has(name)) return 'fs.read';
  return 'exec';
}

/** Long global options of kubectl that take a value as the next word. */
const KUBECTL_GLOBALS = ['--namespace', '--context', '--server', '--kubeconfig', '--cluster', '--user', '--token'];
KUBECTL_GLOBALS.push('--as', '--as-group', '--as-uid', '--certificate-authority', '--client-certificate');
KUBECTL_GLOBALS.push('--client-key', '--request-timeout', '--tls-server-name', '--cache-dir', '--password');
KUBECTL_GLOBALS.push('--username', '--profile', '--profile-output', '--log-file', '--v');
/** Long global options of helm that take a value as the next word. */
const HELM_GLOBALS = ['--namespace', '--kube-context', '--kubeconfig', '--kube-apiserver', '--kube-token'];
HELM_GLOBALS.push('--kube-as-user', '--kube-as-group', '--kube-ca-file', '--registry-config', '--repository-config');
HELM_GLOBALS.push('--repository-cache', '--burst-limit', '--qps', '--kube-tls-server-name');
/** Long global options of docker (and podman) that take a value as the next word. */
const DOCKER_GLOBALS = ['--host', '--context', '--config', '--log-level', '--tlscacert', '--tlscert', '--tlskey'];
DOCKER_GLOBALS.push('--connection', '--url', '--identity', '--root', '--runroot', '--storage-driver');

/**
 * Where the subcommand is, past global options: `shortWithArg` letters and `longWithArg` options take the next
 * word as their value unless it is attached (`-nprod`, `--namespace=prod`); `--` ends the options.
 */
function subcommandAt(args: string[], shortWithArg: string, longWithArg: string[]): number {
  let i = 0;
  while (i < args.length) {
    const a = args[i]!;
    if (a === '--') return i + 1;
    if (!a.startsWith('-') || a === '-') return i;
    if (a.startsWith('--')) i += longWithArg.includes(a) ? 2 : 1;
    else i += a.length === 2 && shortWithArg.includes(a[1]!) ? 2 : 1;
  }
  return i;
}

/** Where the word that chooses a tool's class is (its subcommand, past global options), for tools classed by one. */
function subcommandOf(name: string, args: string[]): number | undefined {
  if (name === 'docker' || name === 'podman') return subcommandAt(args, 'Hcl', DOCKER_GLOBALS);
  if (name === 'kubectl') return subcommandAt(args, 'nsv', KUBECTL_GLOBALS);
  if (name === 'helm') return subcommandAt(args, 'n', HELM_GLOBALS);
  if (['terraform', 'tofu', 'cargo', 'gem', 'twine', 'gh', 'poetry', 'flit', 'hatch'].includes(name))
    return subcommandAt(args, '', []);
  return undefined;
}

/** `docker …`: a push by any of its names (`push`, `image push`, `compose push`, `buildx build --push`) publishes. */
function dockerEffect(args: string[]): Effect {
  const at = subcommandAt(args, 'Hcl', DOCKER_GLOBALS);
  const sub = args[at] ?? '';
  const rest = args.slice(at + 1);
  if (sub === 'push') return 'publish';
  if (['image', 'compose', 'manifest', 'plugin', 'trust', 'buildx', 'builder'].includes(sub)) {
    if (positionals(rest).some((p) => p === 'push' || p === 'sign')) return 'publish';
  }
  if (['build', 'buildx', 'builder', 'compose', 'image'].includes(sub)) {
    // `--push`, `--output type=registry`, `-o type=image,push=true`.
    if (rest.some((a) => a === '--push' || /(^|[,=])(type=registry|push=true)/.test(a))) return 'publish';
  }
  return 'exec';
}

/** Git subcommands that only read. */
const GIT_READ = new Set(['status', 'log', 'diff', 'show', 'shortlog', 'blame', 'ls-files', 'ls-tree', 'rev-parse']);
for (const s of ['describe', 'grep', 'cat-file', 'rev-list', 'show-ref', 'name-rev', 'merge-base', 'count-objects'])
  GIT_READ.add(s);
for (const s of ['version', 'help', 'whatchanged', 'annotate', 'show-branch', 'for-each-ref', 'check-ignore']) {
  GIT_READ.add(s);
}
/** Git subcommands that write the workspace or the repository. */
const GIT_WRITE = new Set(['add', 'commit', 'checkout', 'switch', 'stash', 'merge', 'restore', 'mv', 'rm', 'reset']);
for (const s of ['cherry-pick', 'revert', 'apply', 'am', 'init', 'notes', 'worktree', 'tag', 'gc', 'format-patch'])
  GIT_WRITE.add(s);
for (const s of ['bisect', 'sparse-checkout', 'update-index', 'read-tree', 'write-tree', 'commit-tree', 'prune'])
  GIT_WRITE.add(s);
const GIT_NETWORK = new Set(['clone', 'fetch', 'pull', 'ls-remote', 'submodule']);

/** `git <args>` read: its subcommand past the global options, their words, and whether `-c` configures it. */
function gitParts(args: string[]): { sub: string; rest: string[]; globals: string[]; configured: boolean } {
  let i = 0;
  let configured = false;
  while (i < args.length && args[i]!.startsWith('-')) {
    const a = args[i]!;
    if (a === '-c' || a === '--config-env' || a.startsWith('--config-env=') || /^-c./.test(a)) configured = true;
    i += ['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--config-env', '--super-prefix'].includes(a) ? 2 : 1;
  }
  return { sub: args[i] ?? '', rest: args.slice(i + 1), globals: args.slice(0, i), configured };
}

/** The effect of `git <args>`: global options skipped; `-c` (which can name a program to run) is at least exec. */
function gitEffect(args: string[]): Effect {
  const { sub, rest, configured } = gitParts(args);
  const effect = gitSubEffect(sub, rest);
  return configured ? strongest(effect, 'exec') : effect;
}

/** Why a git command runs what its text does not show: a program named by an option, a subcommand left to a glob. */
function gitOpaque(args: string[]): string | undefined {
  const { sub, rest, globals } = gitParts(args);
  if (globals.some((a) => a.startsWith('--exec-path='))) return 'git --exec-path= chooses the programs git runs';
  if (/[*?[{]/.test(sub)) return "a glob or brace in git's subcommand";
  if (hasFlag(rest, sub === 'clone' ? 'u' : '', ['--receive-pack', '--upload-pack', '--exec']))
    return `git ${sub} runs the program an option names`;
  return undefined;
}

/** The effect of one git subcommand with its arguments. */
function gitSubEffect(sub: string, rest: string[]): Effect {
  const pos = positionals(rest);
  const output = rest.some((a) => a === '--output' || a.startsWith('--output=') || a === '-o');
  switch (sub) {
    case 'push': {
      // Overwriting or deleting remote refs: `--force*`, `--delete`, `--mirror`, `--prune`, `+src:dst`, `:dst`.
      const long = ['--force', '--force-with-lease', '--force-if-includes', '--delete', '--mirror', '--prune'];
      if (hasFlag(rest, 'fd', long) || pos.some((p) => p.startsWith('+') || p.startsWith(':'))) return 'destructive';
      return 'publish';
    }
    case 'send-email':
    case 'send-pack':
      return 'publish';
    case 'subtree':
    case 'lfs':
      return pos[0] === 'push' ? 'publish' : sub === 'lfs' ? 'network' : 'fs.write';
    case 'rebase':
    case 'filter-branch':
    case 'filter-repo':
      return 'destructive';
    case 'reset':
      return hasFlag(rest, '', ['--hard']) ? 'destructive' : 'fs.write';
    case 'clean':
      if (hasFlag(rest, 'f', ['--force'])) return 'destructive';
      return hasFlag(rest, 'n', ['--dry-run']) ? 'fs.read' : 'fs.write';
    case 'branch': {
      const forced = hasFlag(rest, 'f', ['--force']);
      if (hasFlag(rest, 'D') || (forced && hasFlag(rest, 'd', ['--delete']))) return 'destructive';
      if (forced || hasFlag(rest, 'dmMcCu', ['--delete', '--move', '--copy', '--set-upstream-to', '--unset-upstream']))
        return 'fs.write';
      if (hasFlag(rest, 'l', ['--list', '--contains', '--merged', '--no-merged', '--points-at'])) return 'fs.read';
      return pos.length > 0 || rest.includes('--edit-description') ? 'fs.write' : 'fs.read';
    }
    case 'tag':
      return pos.length === 0 || hasFlag(rest, 'l', ['--list']) ? 'fs.read' : 'fs.write';
    case 'stash':
      return pos[0] === 'list' || pos[0] === 'show' ? 'fs.read' : 'fs.write';
    case 'remote':
      if (pos.length === 0 || pos[0] === 'get-url') return 'fs.read';
      return ['add', 'rename', 'remove', 'rm', 'set-url', 'set-head', 'set-branches'].includes(pos[0]!)
        ? 'fs.write'
        : 'network';
    case 'config':
      // Setting a value can name a program a later git command runs (core.pager, alias.x = !cmd).
      return hasFlag(rest, 'l', ['--list', '--get', '--get-all', '--get-regexp']) ? 'fs.read' : 'exec';
    case 'update-ref':
      return rest.includes('-d') ? 'destructive' : 'fs.write';
    case 'reflog':
      return pos[0] === 'expire' || pos[0] === 'delete' ? 'destructive' : 'fs.read';
  }
  if (sub === 'credential' || sub.startsWith('credential-')) return 'credential';
  if (GIT_NETWORK.has(sub)) return 'network';
  // `git grep -O<cmd>` opens the matches with a program of the caller's choosing.
  if (sub === 'grep' && hasFlag(rest, 'O', ['--open-files-in-pager'])) return 'exec';
  if (GIT_READ.has(sub)) return output ? 'fs.write' : 'fs.read';
  if (GIT_WRITE.has(sub)) return 'fs.write';
  return 'exec';
}

/** Why one simple command runs or touches what its words do not show (options that run a program); or undefined. */
export function argvOpaque(argv: string[]): string | undefined {
  const name = baseName(argv[0] ?? '');
  const args = argv.slice(1);
  if (name === 'git') return gitOpaque(args);
  if (PACKAGE_MANAGERS.has(name)) {
    const runs = ['--script-shell', '--userconfig', '--globalconfig', '--node-options', '--shell'];
    if (hasFlag(args, '', runs)) return `${name}: an option chooses the program scripts run with`;
    // A glob or brace in the subcommand's place: the host cannot tell which subcommand runs.
    if (/[*?[{]/.test(positionals(args)[0] ?? '')) return `a glob or brace in ${name}'s subcommand`;
  }
  if (name === 'sed' || name === 'gsed') return sedScripts(args).why;
  // The subcommand (or make target) decides the class: one the shell may expand to another (`docker pu*`, `kubectl
  // {apply,x}`) is not known.
  const at = subcommandOf(name, args);
  if (at !== undefined && /[*?[{]/.test(args[at] ?? '')) return `a glob or brace in ${name}'s subcommand`;
  if (name === 'tar' || name === 'bsdtar' || name === 'gtar') {
    const long = ['--to-command', '--use-compress-program', '--info-script', '--new-volume-script', '--rsh-command'];
    long.push('--rmt-command', '--checkpoint-action');
    // Old-style keys (`tar xIf …`) are an option cluster without the dash.
    const keys = /^[A-Za-z]+$/.test(args[0] ?? '') ? [`-${args[0]}`, ...args.slice(1)] : args;
    if (hasFlag(keys, 'IF', long)) return 'tar runs the program an option names';
  }
  return undefined;
}

/**
 * The scripts of a `sed` command (`-e`, `--expression`, or its first operand) and why they make it opaque: a
 * script file (`-f`) the host does not read, or a command that runs a program or reads or writes a file (`e`,
 * `r`, `R`, `w`, `W`, and the `e` and `w` flags of `s`), with the files those name.
 */
export function sedScripts(args: string[]): { why?: string; files: string[] } {
  const scripts: string[] = [];
  const operands: string[] = [];
  let script = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      operands.push(...args.slice(i + 1));
      break;
    }
    if (a === '--expression' || a === '--file') {
      if (a === '--file') return { why: 'sed runs a script file', files: [] };
      scripts.push(args[++i] ?? '');
    } else if (a.startsWith('--expression=')) scripts.push(a.slice('--expression='.length));
    else if (a.startsWith('--file=')) return { why: 'sed runs a script file', files: [] };
    else if (a === '-l' || a === '--line-length') i++;
    else if (a.startsWith('--')) continue;
    else if (a.startsWith('-') && a.length > 1) {
      for (let k = 1; k < a.length; k++) {
        const c = a[k];
        if (c === 'f') return { why: 'sed runs a script file', files: [] };
        if (c === 'e' || c === 'l') {
          const value = k < a.length - 1 ? a.slice(k + 1) : (args[++i] ?? '');
          if (c === 'e') scripts.push(value);
          break;
        }
        // `-i` takes the rest of the cluster as its suffix (`-i.bak`, `-ie` is suffix `e`).
        if (c === 'i') break;
      }
    } else operands.push(a);
  }
  script = scripts.length > 0;
  if (!script && operands.length > 0) scripts.push(operands[0]!);
  const files: string[] = [];
  let why: string | undefined;
  for (const text of scripts) why ??= sedScriptRisk(text, files);
  return why ? { why, files } : { files };
}

/** Read one sed script (GNU syntax, one pass); record files `r`/`w` name; say why it runs or touches files. */
function sedScriptRisk(text: string, files: string[]): string | undefined {
  let i = 0;
  let why: string | undefined;
  const n = text.length;
  /** Index just past the delimiter that ends a section starting at `from`, or -1. */
  const section = (from: number, delim: string): number => {
    for (let j = from; j < n; j++) {
      if (text[j] === '\\') j++;
      else if (text[j] === delim) return j + 1;
    }
    return -1;
  };
  /** The rest of the line from `from` (a file name), and the index past it. */
  const line = (from: number): [string, number] => {
    let end = text.indexOf('\n', from);
    if (end < 0) end = n;
    return [text.slice(from, end).trim(), end];
  };
  while (i < n) {
    const c = text[i]!;
    if (/[\s;{}!]/.test(c)) {
      i++;
      continue;
    }
    // Addresses: numbers, `$`, `first~step`, `,`, `+N`, `/re/`, `\cREc`.
    if (/[0-9$~,+]/.test(c)) {
      i++;
      continue;
    }
    if (c === '/' || c === '\\') {
      const delim = c === '/' ? '/' : (text[i + 1] ?? '');
      const end = section(c === '/' ? i + 1 : i + 2, delim);
      if (end < 0) return 'a sed script the host cannot read';
      i = end;
      // Address flags (`/re/I`, `/re/M`).
      while (i < n && (text[i] === 'I' || text[i] === 'M')) i++;
      continue;
    }
    i++;
    if (c === '#') i = line(i)[1];
    else if (c === ':' || c === 'b' || c === 't' || c === 'T') {
      while (i < n && !/[;\n}]/.test(text[i]!)) i++;
    } else if (c === 'a' || c === 'i' || c === 'c') {
      // Text to the end of the line, a backslash-newline continuing it.
      while (i < n && text[i] !== '\n') i += text[i] === '\\' ? 2 : 1;
    } else if (c === 'e') {
      why ??= 'sed e runs a command';
      i = line(i)[1];
    } else if (c === 'r' || c === 'R' || c === 'w' || c === 'W') {
      const [file, end] = line(i);
      files.push(file);
      why ??= `sed ${c} ${c === 'r' || c === 'R' ? 'reads' : 'writes'} a file`;
      i = end;
    } else if (c === 's' || c === 'y') {
      const delim = text[i] ?? '';
      if (delim === '' || delim === '\n' || delim === '\\') return 'a sed script the host cannot read';
      const mid = section(i + 1, delim);
      const end = mid < 0 ? -1 : section(mid, delim);
      if (end < 0) return 'a sed script the host cannot read';
      i = end;
      if (c === 'y') continue;
      while (i < n && /[gpiImMe0-9w]/.test(text[i]!)) {
        const f = text[i]!;
        if (f === 'e') why ??= 'sed s///e runs the pattern space as a command';
        if (f === 'w') {
          const [file, stop] = line(i + 1);
          files.push(file);
          why ??= 'sed s///w writes a file';
          i = stop;
          break;
        }
        i++;
      }
    } else if (c === 'q' || c === 'Q' || c === 'l' || c === 'L') {
      while (i < n && /[0-9\s]/.test(text[i]!) && text[i] !== '\n') i++;
    } else if (c === 'v') {
      while (i < n && !/[;\n}]/.test(text[i]!)) i++;
    } else if (!/[=dDgGhHnNpPxzF]/.test(c)) return 'a sed script the host cannot read';
  }
  return why;
}

/** Most words a brace expansion is expanded to when looking for secret paths. */
const MAX_BRACE_WORDS = 64;

/** The `{…,…}` lists holding no other brace, as [open, close] indexes, in one pass. */
function braceLists(word: string): [number, number][] {
  const lists: [number, number][] = [];
  let open = -1;
  let comma = false;
  for (let i = 0; i < word.length; i++) {
    const c = word[i];
    if (c === '{') {
      open = i;
      comma = false;
    } else if (c === ',' && open >= 0) comma = true;
    else if (c === '}' && open >= 0) {
      if (comma) lists.push([open, i]);
      open = -1;
    }
  }
  return lists;
}

/** Most brace lists in one word expanded exactly; a word with more has each list read as `*` instead. */
const MAX_BRACE_LISTS = 6;

/**
 * The words a brace list expands to (`.{env,x}` → `.env`, `.x`; nested and repeated lists too), at most
 * {@link MAX_BRACE_WORDS}; the word itself when it has none. A word with more than {@link MAX_BRACE_LISTS} lists
 * gives one glob, each list a `*` (wider, never narrower), so a hostile word of braces costs little.
 */
export function braceWords(word: string): string[] {
  const lists = braceLists(word);
  if (lists.length === 0) return [word];
  if (lists.length > MAX_BRACE_LISTS) {
    let glob = '';
    let from = 0;
    for (const [open, close] of lists) {
      glob += `${word.slice(from, open)}*`;
      from = close + 1;
    }
    return [word, glob + word.slice(from)];
  }
  const out: string[] = [];
  const queue = [word];
  // Each word taken from the queue has one list fewer than its parent: at most MAX_BRACE_LISTS + 1 levels.
  while (queue.length > 0 && out.length < MAX_BRACE_WORDS) {
    const w = queue.shift()!;
    const [list] = braceLists(w);
    if (!list) {
      out.push(w);
      continue;
    }
    const [open, close] = list;
    for (const alt of w.slice(open + 1, close).split(',', MAX_BRACE_WORDS)) {
      if (queue.length >= MAX_BRACE_WORDS) break;
      queue.push(w.slice(0, open) + alt + w.slice(close + 1));
    }
  }
  return out;
}

/** The strings in an argument that may name a file (`@.env`, `--file=.env`, `-F x=@.env`, `host:.env`, `.{env,x}`). */
function pathCandidates(word: string): string[] {
  return braceWords(word).flatMap(candidatesOf);
}

/** The strings in one (brace-free) argument that may name a file. */
function candidatesOf(arg: string): string[] {
  const out = [arg];
  if (arg.startsWith('@') || arg.startsWith('<')) out.push(arg.slice(1));
  const eq = arg.indexOf('=');
  if (eq >= 0) out.push(arg.slice(eq + 1).replace(/^[@<]/, ''));
  const colon = arg.indexOf(':');
  if (colon >= 0) out.push(arg.slice(colon + 1));
  // A git pathspec's magic (`:(top).env`, `:(glob,icase)**/.env`, `:/.env`, `:!x`) names the path after it.
  const magic = /^:(\([^)]*\)|[/!^]*)/.exec(arg);
  if (magic && magic[0].length > 1) out.push(arg.slice(magic[0].length));
  // A value attached to a short option (`grep -f.env`, `-o.env`, `-rf.env`): each place the value may start.
  const cluster = /^-([A-Za-z0-9]{1,8})/.exec(arg);
  if (cluster) for (let k = 2; k <= cluster[0].length; k++) out.push(arg.slice(k));
  return out;
}

/** Does any argument of the argv name a secret path? */
export function namesSecret(argv: string[]): boolean {
  return argv.some((a) => pathCandidates(a).some((c) => isSecretPath(c) || globMayNameSecret(c)));
}

/**
 * A path whose writing may make git run code later: anything in a `.git` folder or a file named `.git` (hooks and
 * config, but also `commondir`, `config.worktree`, `modules/**`, `worktrees/**` and gitfiles redirect git to config
 * the writer chose — a second attack ran `core.fsmonitor` through `commondir`), in any letter case.
 */
const RUNS_LATER = /(^|\/)\.git(\/|$)/i;

/** Does a path name a file whose writing runs code later? */
export function runsLater(path: string): boolean {
  return RUNS_LATER.test(normalizePath(path));
}

/** Render an argv as shell text that splits back into the same argv (single quotes where needed). */
export function renderArgv(argv: string[]): string {
  return argv.map((a) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

/** Redirect targets that are no file (a write there loses or shows output, nothing more). */
const DEVICES = new Set(['/dev/null', '/dev/stdout', '/dev/stderr', '/dev/tty']);

/** Classify one simple command (an argv): its effect raised to `credential` when it names a secret path. */
export function classifyArgv(argv: string[], via: string, fed = false): Action {
  let effect = strongest(argvEffect(argv, fed), namesSecret(argv) ? 'credential' : 'fs.read');
  if (effect === 'fs.write' && argv.some((a) => pathCandidates(a).some(runsLater))) effect = 'exec';
  const opaque = argvOpaque(argv) !== undefined;
  // The files a sed script reads or writes (`r .env`) are named by no argument of their own.
  const sedFiles = /^g?sed$/.test(baseName(argv[0] ?? '')) ? sedScripts(argv.slice(1)).files : [];
  if (sedFiles.some((f) => isSecretPath(f) || globMayNameSecret(f))) effect = strongest(effect, 'credential');
  const action: Action = {
    effect: opaque ? strongest(effect, 'exec') : effect,
    target: { kind: 'command', value: renderArgv(argv) },
    via,
  };
  if (opaque) action.opaque = true;
  return action;
}

/**
 * Classify a shell command: each part (and each file redirect, as a path action) classified; the effect is the
 * strongest of the parts'. An opaque text is at least `exec`, `opaque`, whatever parts were read before it.
 */
export function classifyCommand(text: string, via: string, ctx: { workspaceRoot?: string } = {}): Action {
  const split = splitCommand(text);
  const parts = split.parts.map((argv, i) => classifyArgv(argv, via, split.fed?.includes(i)));
  for (const r of split.redirects) {
    if (DEVICES.has(r.path)) continue;
    // Bash opens a socket for these names itself.
    const socket = /^\/dev\/(tcp|udp)\/([^/]+)(?:\/(\d{1,5}))?/.exec(r.path);
    if (socket) {
      const value = normalDomain(socket[3] === undefined ? socket[2]! : `${socket[2]!}:${socket[3]}`);
      parts.push({ effect: 'network', target: { kind: 'domain', value }, via });
      continue;
    }
    parts.push(classifyPath(r.path, r.op === '<' ? 'fs.read' : 'fs.write', via, ctx.workspaceRoot));
  }
  // A part whose options run what the text does not show makes the whole command opaque.
  const opaque = split.opaque || parts.some((p) => p.opaque);
  const effect = strongest(opaque ? 'exec' : 'fs.read', ...parts.map((p) => p.effect));
  const action: Action = { effect, target: { kind: 'command', value: text }, via };
  if (parts.length > 0) action.parts = parts;
  if (opaque) action.opaque = true;
  return action;
}

/**
 * A URL's or bare host's destination: lower-case, punycode for IDN (WHATWG URL), no trailing dot, and `:port` unless
 * the port is a web port (80, 443) or the scheme's own.
 */
export function domainOf(target: string): string {
  const trimmed = target.trim();
  try {
    const url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed) ? trimmed : `http://${trimmed}`);
    if (url.hostname !== '') return normalDomain(url.port === '' ? url.hostname : `${url.hostname}:${url.port}`);
  } catch {
    // Not a URL: compared as written, lower-cased (it can only match a grant or rule naming exactly that).
  }
  return normalDomain(trimmed);
}

/** Names the host knows as commands (the unknown ones classify as `exec` only because they are unknown). */
function knownCommand(name: string): boolean {
  const known = [READ_ONLY, WRITES, NETWORK, PACKAGE_MANAGERS];
  const others = ['git', 'rm', 'make', 'docker', 'podman', 'gh', 'twine', 'cargo', 'gem', 'kubectl', 'terraform'];
  others.push('helm', 'tofu', 'mvn', 'mvnw', 'gradle', 'gradlew', 'shred', 'truncate', 'wipefs', 'dd', 'sed');
  return known.some((s) => s.has(name)) || others.includes(name) || /^(deploy|mkfs)/i.test(name);
}

/** Blanks and shell syntax (`<>|;&$\`(){}*?[]`, quotes, backslashes, `!`): a path holding one may be a command. */
const SHELL_SYNTAX = /[\s<>|;&$`(){}*?[\]\\'"!]/;

/**
 * Does a claimed path read as a command too? Any text with blanks or shell syntax does (a plain path with a space,
 * `my notes.txt`, then reads as the command `my`: `exec`, which asks; over-asking is the safe side). A lone word
 * does when it is a command the host knows, run as `./x` or by a bare name, and no document by its name
 * (`./deploy.sh`, `deploy`, not `docs/deploy.md`).
 */
function looksLikeCommand(text: string): boolean {
  if (SHELL_SYNTAX.test(text)) return true;
  if (text.includes('/') && !text.startsWith('./')) return false;
  const name = baseName(text);
  return knownCommand(name) && (!name.includes('.') || /\.(sh|bash|zsh|py|js|mjs|cjs|ts|rb|pl)$/.test(name));
}

/** A runner's `approval/request`: what it claims, which the host classifies again. */
export interface ClaimedAction {
  effect: Effect;
  target: string;
}

/**
 * Classify a runner's request: the target read by the claimed effect (path, command, domain or `server/tool` over
 * MCP), classified by the host, and the stronger of claim and classification returned (a command's parts raised
 * with it, so a part cannot be judged weaker than the whole was claimed).
 */
export function classifyRequest(claimed: ClaimedAction, via: string, ctx: { workspaceRoot?: string }): Action {
  // Untrusted input: an effect the host does not know is taken as the strongest, a target that is no text as ''.
  const claim = EFFECTS.includes(claimed.effect) ? claimed.effect : 'publish';
  const target = typeof claimed.target === 'string' ? claimed.target : '';
  let action: Action;
  switch (claim) {
    case 'fs.read':
    case 'fs.write':
    case 'credential':
      action = classifyPath(target, claim === 'fs.write' ? 'fs.write' : 'fs.read', via, ctx.workspaceRoot);
      break;
    case 'network':
      action =
        via === 'mcp' && /^[^/\s:@]+\/[^/\s]+$/.test(target)
          ? { effect: 'network', target: { kind: 'tool', value: target }, via }
          : { effect: 'network', target: { kind: 'domain', value: domainOf(target) }, via };
      break;
    default:
      action = classifyCommand(target, via, ctx);
  }
  // A target that reads as a known command is classified as one too (a `git push` claimed as a read is a publish).
  const asCommand = looksLikeCommand(target) ? classifyCommand(target, via, ctx) : undefined;
  if (asCommand && strongest(asCommand.effect, action.effect) !== action.effect) action = asCommand;
  const effect = strongest(action.effect, claim);
  if (action.parts) action.parts = action.parts.map((p) => ({ ...p, effect: strongest(p.effect, claim) }));
  return { ...action, effect };
}

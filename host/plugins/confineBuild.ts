import { realpathSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import type * as Esbuild from 'esbuild';

/** Marks a resolve call the plugin made itself, so it is not checked twice. */
const INNER = Symbol('paddock-confine');

/** Whether real path `path` is `root` or below it. */
function inside(path: string, root: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** `path` with every link resolved, or undefined when it does not exist. */
function real(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * An esbuild plugin that confines a build to `roots` (the runner folder, its own node_modules
 * included, and the paddock SDK): every import — relative, absolute, through a link, a package's
 * `exports`/`main`, with any `with { type }` — is resolved by esbuild, then refused unless its
 * real path lies under a root; every file esbuild loads is checked again. Bare imports of
 * `external.names` (paddock's own dependencies) are resolved from `external.resolveDir` (must land in one of
 * `external.moduleDirs`, default its node_modules) and left external by
 * absolute path, so the bundle needs no NODE_PATH and no node_modules next to it.
 */
export function confineBuild(
  roots: readonly string[],
  external: { names: readonly string[]; resolveDir: string; moduleDirs?: readonly string[] },
): Esbuild.Plugin {
  const realRoots = roots.map((r) => real(r) ?? r);
  const allowed = (path: string) => {
    const resolved = real(path);
    return resolved !== undefined && realRoots.some((root) => inside(resolved, root));
  };
  const externalDir = external.resolveDir;
  // An installed paddock's dependencies sit in the installing project's node_modules (hoisted), not under the package.
  const moduleDirs = (external.moduleDirs ?? [join(externalDir, 'node_modules')]).map((d) => real(d) ?? d);
  const isExternal = (spec: string) => external.names.some((name) => spec === name || spec.startsWith(`${name}/`));
  return {
    name: 'paddock-confine',
    setup(build) {
      build.onResolve({ filter: /.*/ }, async (args) => {
        if ((args.pluginData as { [INNER]?: boolean } | undefined)?.[INNER]) return undefined;
        if (args.path.startsWith('node:')) return { path: args.path, external: true };
        const external = isExternal(args.path);
        const result = await build.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          namespace: args.namespace,
          resolveDir: external ? externalDir : args.resolveDir,
          with: args.with,
          pluginData: { [INNER]: true },
        });
        if (result.errors.length > 0) return { errors: result.errors };
        if (result.external) return { path: result.path, external: true }; // a Node builtin
        const from = args.importer ? ` in ${args.importer}` : '';
        if (external) {
          // The host's own copy, by absolute path: the sandbox binds the host's node_modules read-only.
          const path = real(result.path) ?? result.path;
          if (!moduleDirs.some((dir) => inside(path, dir)))
            return { errors: [{ text: `import "${args.path}"${from} did not resolve to paddock's own dependency` }] };
          return { path: result.path, external: true };
        }
        if (result.namespace === 'file' && !allowed(result.path)) {
          return {
            errors: [
              {
                text:
                  `import "${args.path}"${from} resolves to ${result.path}, outside the runner folder: a runner ` +
                  `build may read only its own folder (node_modules included) and the paddock SDK`,
              },
            ],
          };
        }
        return {
          path: result.path,
          namespace: result.namespace,
          sideEffects: result.sideEffects,
          suffix: result.suffix,
          pluginData: result.pluginData as unknown,
        };
      });
      // The floor under the resolver: nothing is loaded from outside the roots, however it was reached.
      build.onLoad({ filter: /.*/ }, (args) =>
        args.namespace === 'file' && !allowed(args.path)
          ? {
              errors: [
                {
                  text:
                    `${args.path} is outside the runner folder: a runner build may read only its own folder and ` +
                    `the paddock SDK`,
                },
              ],
            }
          : undefined,
      );
    },
  };
}

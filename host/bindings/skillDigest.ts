import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, readdirSync, readlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { readBoundedFile } from '../util/readBoundedFile.js';

/** The largest SKILL.md whose front matter is read (a bigger one counts as missing; its bytes are still digested). */
export const SKILL_MD_MAX_BYTES = 1024 * 1024;

/** The longest front matter read: 4 KiB (16 KB of `[` already aborts Node; 8 KB ends in a caught stack overflow). */
const FRONT_MATTER_MAX_CHARS = 4 * 1024;

/** What a skill says about itself, and the digest of its content. */
export interface SkillIdentity {
  name: string;
  description?: string;
  version?: string;
  /** `sha256:<hex>` over every entry's relative path and bytes (links by their target text, never followed). */
  digest: string;
}

/** Every entry under a folder, sorted, without following links. */
function entries(root: string, dir = root, out: { rel: string; kind: 'file' | 'link' | 'dir'; path: string }[] = []) {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    const stat = lstatSync(path);
    const rel = relative(root, path);
    if (stat.isSymbolicLink()) out.push({ rel, kind: 'link', path });
    else if (stat.isDirectory()) {
      out.push({ rel, kind: 'dir', path });
      entries(root, path, out);
    } else if (stat.isFile()) out.push({ rel, kind: 'file', path });
  }
  return out;
}

/** The YAML front matter of a SKILL.md (between leading `---` lines), or {}. */
function frontMatter(text: string): Record<string, unknown> {
  const match = /^---\r?\n([\s\S]*?)\r?\n---/.exec(text);
  // Real front matter is a few lines; the parser recurses per nesting level, and 200 KB of `- ` aborts Node out of
  // memory (docs/decisions.md E1): a longer one counts as none.
  if (!match || match[1]!.length > FRONT_MATTER_MAX_CHARS) return {};
  try {
    const value: unknown = parseYaml(match[1]!);
    return value && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * Read a skill folder: its SKILL.md front matter (`name`, `description`, `version` or
 * `metadata.version`) and its content digest (a missing SKILL.md leaves only the fallback name).
 */
export function readSkill(folder: string, fallbackName: string): SkillIdentity {
  const hash = createHash('sha256');
  for (const e of entries(folder)) {
    hash.update(`${e.kind}\0${e.rel}\0`);
    // Not a link (lstat said file); re-checked on the open file so a swap for a FIFO cannot block the host.
    if (e.kind === 'file') hash.update(readBoundedFile(e.path));
    else if (e.kind === 'link') hash.update(readlinkSync(e.path));
    hash.update('\0');
  }
  let skillMd = '';
  try {
    skillMd = readBoundedFile(join(folder, 'SKILL.md'), { maxBytes: SKILL_MD_MAX_BYTES, followLinks: true }).toString(
      'utf8',
    );
  } catch {
    // `apply` refuses a skill without SKILL.md; one that lost it since (or whose SKILL.md is a FIFO, a device or
    // too big) still gets a digest.
  }
  const meta = frontMatter(skillMd);
  const metadata = (meta.metadata ?? {}) as Record<string, unknown>;
  const version = meta.version ?? metadata.version;
  return {
    name: typeof meta.name === 'string' ? meta.name : fallbackName,
    ...(typeof meta.description === 'string' ? { description: meta.description } : {}),
    ...(version !== undefined ? { version: String(version) } : {}),
    digest: `sha256:${hash.digest('hex')}`,
  };
}

/** Drop write permission from every file of a copied skill (the process backend's weak read-only). */
export function makeFilesReadOnly(folder: string): void {
  for (const e of entries(folder)) if (e.kind === 'file') chmodSync(e.path, 0o444);
}

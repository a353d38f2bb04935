/**
 * Relative links of a Markdown file that lead nowhere: a file that does not exist, or an anchor (`#heading`,
 * `other.md#heading`) that names no heading of its target, with GitHub's heading slugs.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '../..');

/** GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));
}

/** The broken relative links of `path` (relative to the repository root), as `path: link`. */
export function brokenLinks(path: string): string[] {
  const file = resolve(root, path);
  const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  const broken: string[] = [];
  for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z]+:/i.test(target!)) continue; // http:, https:, mailto:
    const [where, anchor] = target!.split('#') as [string, string | undefined];
    const linked = where === '' ? file : resolve(dirname(file), where);
    if (!existsSync(linked)) broken.push(`${path}: ${target}`);
    else if (anchor !== undefined && linked.endsWith('.md') && !anchorsOf(linked).has(anchor))
      broken.push(`${path}: ${target} (no such heading)`);
  }
  return broken;
}

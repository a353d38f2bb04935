/** The docs moved out of the README into docs/: every relative link between them must still lead somewhere. */
import { readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { brokenLinks, slug } from '../../support/markdown-links.js';

const docs = readdirSync(resolve(import.meta.dirname, '../../../docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/${f}`);

describe('links in the documentation', () => {
  it('slugs headings as GitHub does', () => {
    expect(slug('Exactly once, and the trade-off of `exactlyOnce: false`')).toBe(
      'exactly-once-and-the-trade-off-of-exactlyonce-false',
    );
    expect(slug('Where the spec says "not shown"')).toBe('where-the-spec-says-not-shown');
  });

  it('lead to files and headings that exist', () => {
    expect(docs.length).toBeGreaterThan(10);
    expect(['README.md', 'CHANGELOG.md', ...docs].flatMap((path) => brokenLinks(path))).toEqual([]);
  });
});

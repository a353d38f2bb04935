/**
 * docs/configuration.md is generated from the configuration schema (`npm run docs:config`): these tests fail
 * when the schema changed and the file was not regenerated, when a key has no description, and when a default
 * the file states is not the one the schema applies.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.js';
import { descriptionGaps, renderReference } from '../../../tools/docs/config-reference.js';
import { configKeys } from '../../support/config-keys.js';

const file = resolve(import.meta.dirname, '../../../docs/configuration.md');
const reference = readFileSync(file, 'utf8');

describe('docs/configuration.md', () => {
  it('is what `npm run docs:config` writes from the current schema', async () => {
    const rendered = await renderReference();
    // On failure: run `npm run docs:config` and commit docs/configuration.md.
    expect(reference === rendered, 'docs/configuration.md is stale: run `npm run docs:config`').toBe(true);
  });

  it('has a row for every configuration key', () => {
    const keys = configKeys().leaves;
    expect(keys.length).toBeGreaterThan(80);
    expect(keys.filter((key) => !reference.includes(`| \`${key}\` `))).toEqual([]);
  });

  it('describes every key, and no key the schema does not have', () => {
    expect(descriptionGaps()).toEqual({ undescribed: [], stale: [] });
  });

  it('states the default the schema actually applies for every key whose default it writes as a literal', () => {
    // Documents with every optional section present, so nested defaults are filled in; the token store's
    // keys depend on its type, so once per type.
    const document = (store: Record<string, unknown>) => ({
      connector: { name: 'n' },
      api: { baseUrl: 'https://api.example.test' },
      oauth: { clientId: 'c', clientSecret: 's', redirectUri: 'https://app.example.test/cb', store },
      sources: [{ locations: ['6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11'] }],
      kafka: { brokers: ['127.0.0.1:9092'], ssl: {} },
      schemaRegistry: { url: 'http://127.0.0.1:8081' },
    });
    const configs = [{ type: 'file' }, { type: 'kafka' }].map(
      (store) => parseConfig(document(store), {}) as unknown as Record<string, unknown>,
    );
    const schemaKeys = new Set(configKeys().leaves);
    const rows = [...reference.matchAll(/^\| `([a-zA-Z]+(?:\.[a-zA-Z]+|\[\])+)`\s*\| `([^`]*)`\s*\|/gm)];
    expect(rows.length).toBeGreaterThan(60);
    const wrong: string[] = [];
    for (const [, key, written] of rows) {
      // A default written as another key (`api.baseUrl`, `connector.name`) is resolved at run time.
      if (schemaKeys.has(written!)) continue;
      const path = key!.replace('[]', '.0').split('.');
      const actual = configs
        .map((config) =>
          path.reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], config),
        )
        .find((value) => value !== undefined);
      if (JSON.stringify(actual) !== JSON.stringify(literal(written!)))
        wrong.push(`${key}: the reference says ${written}, the schema gives ${JSON.stringify(actual)}`);
    }
    expect(wrong).toEqual([]);
  });
});

/** A default as written between backticks: `[408, 425]`, `true`, `100`, `data`. */
function literal(written: string): unknown {
  if (written.startsWith('[') && written.endsWith(']'))
    return written
      .slice(1, -1)
      .split(',')
      .map((item) => literal(item.trim()));
  if (written === 'true' || written === 'false') return written === 'true';
  if (/^-?\d+(\.\d+)?$/.test(written)) return Number(written);
  return written;
}

/**
 * The docs name error codes for operators to look up (runbook, sync, security...): each must be one the
 * connector has, in the catalogue (src/errors/codes.ts), so a renamed code cannot leave a dead reference.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../../src/errors/index.js';

/** Prefixes of the connector's error codes. */
const CODE =
  /\b(?:API|AUTH|KAFKA|CONFIG|ITEM|CURSOR|SCHEMA_REGISTRY|OFFSET|DEVSTACK|SANDBOX|METRICS|DEMO|SECRET)_[A-Z0-9_]+\b/g;
/** Environment variables the docs name with the same prefixes: not error codes. */
const ENVIRONMENT = new Set([
  'SANDBOX_ADMIN_KEY',
  'SANDBOX_CLIENT_SECRET',
  'SANDBOX_WEBHOOK_SECRET',
  'KAFKA_BROKERS',
  'SCHEMA_REGISTRY_URL',
]);

describe('error codes in the docs', () => {
  it('names only codes of the catalogue', () => {
    const root = new URL('../../../', import.meta.url);
    const pages = [
      'README.md',
      ...readdirSync(new URL('docs/', root)).map((name) => `docs/${name}`),
      ...readdirSync(new URL('packages/', root)).map((name) => `packages/${name}/README.md`),
    ].filter((path) => path.endsWith('.md') && existsSync(new URL(path, root)));
    const unknown = pages.flatMap((path) =>
      [...readFileSync(new URL(path, root), 'utf8').matchAll(CODE)]
        .map((m) => m[0])
        .filter((code) => !(code in ERROR_CODES) && !ENVIRONMENT.has(code))
        .map((code) => `${path}: ${code}`),
    );
    expect(unknown).toEqual([]);
  });
});

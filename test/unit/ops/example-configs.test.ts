import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseConfig } from '../../../src/config/load.js';

const example = parse(
  readFileSync(new URL('../../../config/examples/connector.yaml', import.meta.url), 'utf8'),
) as unknown;

const env = {
  CALLS_OAUTH_CLIENT_ID: 'client-id',
  CALLS_OAUTH_CLIENT_SECRET: 'client-secret',
  KAFKA_PASSWORD: 'kafka-password',
  SCHEMA_REGISTRY_PASSWORD: 'registry-password',
};

describe('config/examples/connector.yaml', () => {
  it('validates once its secrets are in the environment, and takes them from there', () => {
    const config = parseConfig(example, env);
    expect(config.oauth?.clientSecret).toBe('client-secret');
    expect(config.kafka.sasl).toMatchObject({ password: 'kafka-password' });
    expect(config.schemaRegistry.password).toBe('registry-password');
  });

  it('is refused with the variable named when a secret is missing from the environment', () => {
    const { KAFKA_PASSWORD: _omitted, ...partial } = env;
    expect(() => parseConfig(example, partial)).toThrow(/KAFKA_PASSWORD/);
  });

  it('keeps no literal secret in the file', () => {
    const text = readFileSync(new URL('../../../config/examples/connector.yaml', import.meta.url), 'utf8');
    for (const key of ['clientSecret', 'password']) {
      for (const line of text.split('\n').filter((l) => l.trim().startsWith(`${key}:`))) {
        expect(line).toMatch(/\$\{[A-Z_]+\}/);
      }
    }
  });
});

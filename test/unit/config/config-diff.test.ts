import { describe, expect, it } from 'vitest';
import {
  changesAnything,
  configurationDiff,
  configurationFingerprint,
  reasonFixed,
} from '../../../src/config/config-diff.js';
import { parseConfig } from '../../../src/config/load.js';
import type { ConnectorConfig } from '../../../src/config/schema.js';
import { MINIMAL_CONFIG } from '../../support/minimal-config.js';

const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';
const C = '00000000-0000-4000-8000-00000000000c';

function config(sources: unknown[], overrides: Record<string, unknown> = {}): ConnectorConfig {
  return parseConfig({ ...MINIMAL_CONFIG, sources, ...overrides }, {});
}

describe('the configuration diff', () => {
  it('names the locations added, removed, changed and unchanged, and the grants added and removed', () => {
    const before = config([
      { grant: 'north', locations: [A, B] },
      { grant: 'south', locations: [C], startSince: '2024-01-01T00:00:00Z' },
    ]);
    const after = config([
      { grant: 'north', locations: [A] },
      {
        grant: 'east',
        locations: [C, '00000000-0000-4000-8000-00000000000d'],
        startSince: '2024-01-01T00:00:00Z',
      },
    ]);
    const diff = configurationDiff(before, after);
    expect(diff.locations).toEqual({
      added: [
        {
          location: '00000000-0000-4000-8000-00000000000d',
          grant: 'east',
          startSince: '2024-01-01T00:00:00Z',
        },
      ],
      removed: [{ location: B, grant: 'north', startSince: null }],
      changed: [
        {
          from: { location: C, grant: 'south', startSince: '2024-01-01T00:00:00Z' },
          to: { location: C, grant: 'east', startSince: '2024-01-01T00:00:00Z' },
        },
      ],
      unchanged: [A],
    });
    expect(diff.grants).toEqual({ added: ['east'], removed: ['south'], unchanged: ['north'] });
    expect(diff.fixed).toEqual([]);
    expect(changesAnything(diff)).toBe(true);
  });

  it('finds nothing to change when only the order and grouping of the locations differ, or a uid’s case', () => {
    const before = config([{ locations: [A, B] }, { locations: [C] }]);
    const after = config([{ locations: [C, B.toUpperCase(), A] }]);
    const diff = configurationDiff(before, after);
    expect(diff.locations.unchanged).toEqual([C, B.toUpperCase(), A]);
    expect(changesAnything(diff)).toBe(false);
  });

  it('names each key outside sources that differs, with why it cannot change while running, never its value', () => {
    const before = config([{ locations: [A] }], {
      kafka: { brokers: ['127.0.0.1:9092'] },
      auth: { staticToken: 'old-secret' },
    });
    const after = config([{ locations: [A, B] }], {
      kafka: { brokers: ['127.0.0.1:9092', '127.0.0.1:9093'] },
      auth: { staticToken: 'new-secret' },
      poll: { intervalMs: '30s' },
      connector: { name: 'other' },
    });
    const diff = configurationDiff(before, after);
    expect(diff.fixed).toEqual([
      { key: 'auth.staticToken', reason: 'the token providers are built from it at start' },
      {
        key: 'connector.name',
        reason:
          'names the offset keys, the consumer groups and the transactional ids: a new name is another connector',
      },
      {
        key: 'kafka.brokers',
        reason: 'the Kafka clients, topics and transactional producers are made from it at start',
      },
      { key: 'poll.intervalMs', reason: "the scheduler's settings are read when it is built" },
    ]);
    expect(JSON.stringify(diff)).not.toContain('secret');
    expect(diff.locations.added.map((l) => l.location)).toEqual([B]);
  });

  it('gives a key the reason of its longest known prefix, and a generic one to an unknown section', () => {
    expect(reasonFixed('connector.mode')).toBe(
      'decides how instances share the locations; every instance must restart together',
    );
    expect(reasonFixed('webhooks.routes')).toBe(
      'the receiver, its routes and its signature schemes are started with it',
    );
    expect(reasonFixed('apiX.y')).toBe('read once at start');
  });
});

describe('the configuration fingerprint', () => {
  it('is the same whatever the order, grouping and case of the locations', () => {
    const one = configurationFingerprint(config([{ locations: [A, B] }, { locations: [C] }]));
    expect(one).toMatch(/^[0-9a-f]{16}$/);
    expect(configurationFingerprint(config([{ locations: [C, B.toUpperCase(), A] }]))).toBe(one);
  });

  it('differs when a location, its grant or its startSince differs, and not for keys outside sources', () => {
    const base = configurationFingerprint(config([{ locations: [A, B] }]));
    expect(configurationFingerprint(config([{ locations: [A] }]))).not.toBe(base);
    expect(configurationFingerprint(config([{ grant: 'north', locations: [A, B] }]))).not.toBe(base);
    expect(
      configurationFingerprint(config([{ locations: [A, B], startSince: '2024-01-01T00:00:00Z' }])),
    ).not.toBe(base);
    expect(configurationFingerprint(config([{ locations: [A, B] }], { poll: { intervalMs: 1000 } }))).toBe(
      base,
    );
  });
});

import { describe, expect, it } from 'vitest';
import { ignoredSettings } from '../../../src/config/ignored-settings.js';
import { parseConfig } from '../../../src/config/load.js';
import { MINIMAL_CONFIG } from '../../support/minimal-config.js';

const minimal = MINIMAL_CONFIG;

/** The ignored settings of a document, as validate-config and run see them. */
const ignoredIn = (document: Record<string, unknown>) => ignoredSettings(document, parseConfig(document, {}));

describe('ignoredSettings', () => {
  it('names poll.intervalMs, written while webhooks are enabled, and the key that applies instead', () => {
    const ignored = ignoredIn({
      ...minimal,
      poll: { intervalMs: '60s' },
      webhooks: { enabled: true, allowUnsigned: true, reconcileIntervalMs: '10m' },
    });
    expect(ignored).toEqual([
      {
        key: 'poll.intervalMs',
        instead: 'webhooks.reconcileIntervalMs',
        problem:
          'poll.intervalMs (60000 ms) is ignored while webhooks.enabled: locations are polled every ' +
          'webhooks.reconcileIntervalMs (600000 ms) and nudged by deliveries; set webhooks.reconcileIntervalMs ' +
          'to change the interval, and remove poll.intervalMs',
      },
    ]);
  });

  it('says the default reconcile interval when the file does not set it', () => {
    const [ignored] = ignoredIn({
      ...minimal,
      poll: { intervalMs: 5_000 },
      webhooks: { enabled: true, allowUnsigned: true },
    });
    expect(ignored?.problem).toContain('webhooks.reconcileIntervalMs (900000 ms)');
  });

  it('names nothing when poll.intervalMs applies (webhooks off) or is not written (its default is not a choice)', () => {
    expect(ignoredIn({ ...minimal, poll: { intervalMs: '60s' } })).toEqual([]);
    expect(ignoredIn({ ...minimal, poll: { intervalMs: '60s' }, webhooks: { enabled: false } })).toEqual([]);
    expect(ignoredIn({ ...minimal, webhooks: { enabled: true, allowUnsigned: true } })).toEqual([]);
    expect(
      ignoredIn({
        ...minimal,
        poll: { maxLocationsInFlight: 2 },
        webhooks: { enabled: true, allowUnsigned: true },
      }),
    ).toEqual([]);
  });
});

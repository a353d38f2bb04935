import { describe, expect, it } from 'vitest';
import { firstItemParameters, readAnnounced } from '../../../../src/api/rate-limit/headers.js';

const NOW = 1_700_000_000_000;
const reader =
  (headers: Record<string, string>) =>
  (name: string): string | null =>
    headers[name] ?? null;

describe('readAnnounced', () => {
  it('reads the IETF RateLimit-Policy and RateLimit fields', () => {
    expect(
      readAnnounced(
        reader({ 'ratelimit-policy': '"default";q=100;w=60', ratelimit: '"default";r=0;t=30' }),
        NOW,
      ),
    ).toEqual({ ratePerSecond: 100 / 60, remaining: 0, resetAtMs: NOW + 30_000 });
  });

  it("reads the earlier drafts' RateLimit-Limit/Remaining/Reset with a bare-number policy", () => {
    expect(
      readAnnounced(
        reader({
          'ratelimit-policy': '10;w=1, 1000;w=3600',
          'ratelimit-limit': '10',
          'ratelimit-remaining': '4',
          'ratelimit-reset': '1',
        }),
        NOW,
      ),
    ).toEqual({ ratePerSecond: 10, remaining: 4, resetAtMs: NOW + 1_000 });
  });

  it('reads X-RateLimit-* with a reset given as a Unix time, without inventing a rate', () => {
    const resetEpoch = NOW / 1000 + 120;
    expect(
      readAnnounced(
        reader({
          'x-ratelimit-limit': '5000',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': String(resetEpoch),
        }),
        NOW,
      ),
    ).toEqual({ ratePerSecond: null, remaining: 0, resetAtMs: NOW + 120_000 });
  });

  it('announces nothing without the headers, and ignores values that do not parse', () => {
    expect(readAnnounced(reader({}), NOW)).toEqual({ ratePerSecond: null, remaining: null, resetAtMs: null });
    expect(
      readAnnounced(reader({ 'ratelimit-policy': '"p";q=abc;w=-1', 'x-ratelimit-remaining': 'lots' }), NOW),
    ).toEqual({ ratePerSecond: null, remaining: null, resetAtMs: null });
  });

  it('takes the parameters of the first list item only', () => {
    expect([...firstItemParameters('"a";q=5;w=1, "b";q=9;w=2')]).toEqual([
      ['q', '5'],
      ['w', '1'],
    ]);
  });
});

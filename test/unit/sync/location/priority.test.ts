import { describe, expect, it } from 'vitest';
import { LIVE_SINCE_WINDOW_MS, requestHint } from '../../../../src/sync/location/priority.js';

const NOW = Date.parse('2026-11-24T10:00:00Z');

describe('requestHint', () => {
  it('marks a location that completed a traversal in this process live', () => {
    expect(requestHint(1, '2020-01-01T00:00:00Z', NOW)).toEqual({ priority: 'live' });
  });

  it('marks a location reading history as backfill, however it started', () => {
    expect(requestHint(0, null, NOW)).toEqual({ priority: 'backfill' });
    expect(requestHint(0, '2026-11-23T10:00:00Z', NOW)).toEqual({ priority: 'backfill' });
  });

  it('marks a location whose since is recent live (caught up before a restart)', () => {
    const recent = new Date(NOW - LIVE_SINCE_WINDOW_MS + 1000).toISOString();
    expect(requestHint(0, recent, NOW)).toEqual({ priority: 'live' });
  });
});

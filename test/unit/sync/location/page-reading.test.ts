import { describe, expect, it } from 'vitest';
import type { EnrichedItem } from '../../../../src/sync/location/enricher.js';
import type { PreparedPage } from '../../../../src/sync/location/page-pipeline.js';
import { committable, expiresAt, withoutExpiredAnswers } from '../../../../src/sync/location/page-reading.js';
import { preparedPage } from '../../../support/sync/prepared-page.js';

const enrichment = { startedAt: null, endedAt: null, isPrivate: false, conversationUid: null };

/** A page of three calls: a answered at 1,000, b at 5,000, c unenriched (answered at 0). */
function page(): PreparedPage {
  const base = preparedPage([
    { uid: 'a', updatedAt: '2026-01-01T00:00:00Z' },
    { uid: 'b', updatedAt: '2026-01-01T00:00:00Z' },
    { uid: 'c', updatedAt: '2026-01-01T00:00:00Z' },
  ]);
  const [a, b, c] = base.enriched as [EnrichedItem, EnrichedItem, EnrichedItem];
  return {
    ...base,
    enriched: [
      { ...a, enrichment, answeredAtMs: 1_000 },
      { ...b, enrichment, answeredAtMs: 5_000 },
      { ...c, unenriched: { reason: 'gone', detail: 'gone' }, answeredAtMs: 0 },
    ],
  };
}

describe('the privacy bound of a page at its commit', () => {
  it('expires with its oldest enrichment (an unenriched call publishes no number), never without a bound', () => {
    expect(expiresAt(page(), 60_000)).toBe(61_000);
    expect(expiresAt(page(), undefined)).toBeNull();
    expect(committable(page(), 61_000, 60_000)).toBe(true);
    expect(committable(page(), 61_001, 60_000)).toBe(false);
  });

  it('drops, at commit, every enrichment answered before commitAt − the bound: the call is published redacted', () => {
    const fresh = page();
    expect(withoutExpiredAnswers(fresh, 61_000, 60_000)).toBe(fresh);
    const guarded = withoutExpiredAnswers(page(), 62_000, 60_000);
    expect(guarded.enriched.map((i) => [i.listed.uid, i.enrichment === null, i.unenriched?.reason])).toEqual([
      ['a', true, 'unavailable'],
      ['b', false, undefined],
      ['c', true, 'gone'],
    ]);
  });
});

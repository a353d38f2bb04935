import { describe, expect, it } from 'vitest';
import { SkippableError } from '../../../../src/errors/index.js';
import { Enricher, type EnrichedItem } from '../../../../src/sync/location/enricher.js';
import type { ListedCall, LocationOffset, MappedItem } from '../../../../src/sync/model.js';
import {
  assemblePage,
  mapPage,
  preparePage,
  type PipelineSettings,
  type PreparedPage,
} from '../../../../src/sync/location/page-pipeline.js';
import { sampleCall } from '../../../support/calls.js';
import { FakeCallsApi } from '../../../support/sync/fake-calls-api.js';
import { testFingerprints } from '../../../support/sync/fingerprints.js';

const LOC = '11111111-1111-1111-1111-111111111111';
const t = (second: number) => `2024-03-01T12:00:${String(second).padStart(2, '0')}Z`;

const settings: PipelineSettings = {
  locationUid: LOC,
  boundaryCap: 100,
  privacy: 'redact-unless-public',
  fingerprints: testFingerprints,
};

function listed(uid: string, second: number): ListedCall {
  const {
    enriched: _enriched,
    customerPhoneNumberRedacted: _redacted,
    ...call
  } = sampleCall({
    uid,
    locationUid: LOC,
    updatedAt: t(second),
    isPrivate: null,
  });
  return call;
}

const ok = (call: ListedCall): MappedItem => ({ ok: true, call });
const rejected = (uid: string | null, second: number): MappedItem => ({
  ok: false,
  error: new SkippableError('ITEM_BAD_UPDATED_AT', `item ${uid ?? '?'} is invalid`),
  position: uid === null ? null : { uid, updatedAt: t(second) },
  payload: `{"uid":${JSON.stringify(uid)}}`,
});

function prepared(enriched: EnrichedItem[], items: MappedItem[] = []): PreparedPage {
  const { entries, unplaced } = mapPage(items, settings);
  return {
    unplaced,
    enriched,
    outcome: {
      accepted: entries,
      duplicates: [],
      belowWatermark: [],
      offset: { since: null, cursor: null, watermark: null, boundary: [] },
      complete: false,
    },
    leftToLive: 0,
  };
}

describe('mapPage', () => {
  it('keeps calls and placed rejected items in listing order, and sets aside rejected items without a place', () => {
    const a = listed('a', 1);
    const { entries, unplaced } = mapPage([ok(a), rejected('x', 2), rejected(null, 3)], settings);
    expect(entries.map((e) => [e.uid, e.call?.uid ?? null, e.deadLetter?.uid ?? null])).toEqual([
      ['a', 'a', null],
      ['x', null, 'x'],
    ]);
    expect(unplaced).toMatchObject([{ locationUid: LOC, uid: null, code: 'ITEM_BAD_UPDATED_AT' }]);
    expect(entries[0]?.fingerprint).toBe(testFingerprints.fields(a));
  });
});

describe('preparePage', () => {
  it('drops what the starting offset already published at its boundary and enriches only the accepted calls', async () => {
    const api = new FakeCallsApi([
      { uid: 'a', locationUid: LOC, updatedAt: t(5) },
      { uid: 'b', locationUid: LOC, updatedAt: t(5) },
    ]);
    const page = await api.listPage({
      kind: 'first',
      locationUid: LOC,
      since: null,
      order: 'asc',
      limit: 10,
    });
    const [first] = page.items;
    if (first === undefined || !first.ok) throw new Error('the fake listed nothing');
    const from: LocationOffset = {
      since: t(5),
      cursor: null,
      watermark: t(5),
      boundary: ['a'],
      boundaryFingerprints: { a: testFingerprints.fields(first.call) },
    };
    const result = await preparePage(
      from,
      page,
      settings,
      new Enricher({ api, enabled: true, concurrency: 2 }),
    );
    expect(result.outcome.duplicates.map((e) => e.uid)).toEqual(['a']);
    expect(result.enriched.map((e) => e.listed.uid)).toEqual(['b']);
    expect(api.gets).toEqual(['b']);
  });
});

describe('assemblePage', () => {
  it('redacts calls whose privacy is unknown and keeps public ones, counting the redacted', () => {
    const a = listed('a', 1);
    const b = listed('b', 2);
    const page = assemblePage(
      prepared([
        { listed: a, enrichment: null, unenriched: { reason: 'unavailable', detail: 'HTTP 503' } },
        {
          listed: b,
          enrichment: { startedAt: null, endedAt: null, isPrivate: false, conversationUid: null },
          unenriched: null,
        },
      ]),
      settings,
    );
    expect(page.calls.map((c) => [c.uid, c.customerPhoneNumberRedacted, c.enriched])).toEqual([
      ['a', true, false],
      ['b', false, true],
    ]);
    expect(page.redacted).toBe(1);
    expect(page.unenriched).toEqual(new Map([['unavailable', 1]]));
    expect(page.unenrichedExamples).toEqual([{ uid: 'a', reason: 'unavailable', detail: 'HTTP 503' }]);
  });

  it('publishes a tombstone for a call gone only when configured, and the redacted record otherwise', () => {
    const gone: EnrichedItem = {
      listed: listed('g', 1),
      enrichment: null,
      unenriched: { reason: 'gone', detail: 'HTTP 404' },
    };
    const withTombstones = assemblePage(prepared([gone]), { ...settings, tombstoneGone: true });
    expect([withTombstones.tombstones, withTombstones.calls]).toEqual([['g'], []]);
    const without = assemblePage(prepared([gone]), settings);
    expect([without.tombstones, without.calls.map((c) => c.uid)]).toEqual([[], ['g']]);
  });

  it('lists the placed dead letters in listing order, then the unplaced ones', () => {
    const page = assemblePage(
      prepared([], [rejected(null, 1), rejected('x', 2), rejected('y', 3)]),
      settings,
    );
    expect(page.deadLetters.map((d) => d.uid)).toEqual(['x', 'y', null]);
  });

  it('names at most five unenriched calls while counting them all', () => {
    const items = Array.from({ length: 7 }, (_, i): EnrichedItem => ({
      listed: listed(`c${i}`, i),
      enrichment: null,
      unenriched: { reason: 'refused', detail: 'HTTP 403' },
    }));
    const page = assemblePage(prepared(items), settings);
    expect(page.unenriched.get('refused')).toBe(7);
    expect(page.unenrichedExamples).toHaveLength(5);
  });
});

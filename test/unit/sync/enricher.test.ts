import { describe, expect, it } from 'vitest';
import type { ListedCall } from '../../../src/api/call-mapper.js';
import { FatalError, RetriableError } from '../../../src/errors/index.js';
import { Enricher } from '../../../src/sync/enricher.js';

const listed = (uid: string): ListedCall => ({
  uid,
  locationUid: 'L',
  updatedAt: '2024-03-01T12:00:00Z',
  locationPhoneNumber: '+1',
  customerPhoneNumber: '+2',
  startedAt: null,
  endedAt: null,
  isPrivate: null,
  conversationUid: null,
});
const body = {
  startedAt: '2024-03-01T11:00:00Z',
  endedAt: '2024-03-01T11:01:00Z',
  isPrivate: false,
  conversationUid: 'v',
};

describe('Enricher', () => {
  it('keeps at most `concurrency` single-call requests in flight and keeps page order', async () => {
    let inFlight = 0;
    let peak = 0;
    const api = {
      getCall: async (uid: string) => {
        inFlight += 1;
        peak = Math.max(peak, inFlight);
        await new Promise((resolve) => setImmediate(resolve));
        inFlight -= 1;
        return { ...body, conversationUid: uid };
      },
    };
    const result = await new Enricher({ api, enabled: true, concurrency: 3 }).enrich(
      Array.from({ length: 10 }, (_, i) => listed(`c${i}`)),
    );
    expect(peak).toBe(3);
    expect(result.map((r) => (r.ok ? r.enrichment?.conversationUid : null))).toEqual(
      Array.from({ length: 10 }, (_, i) => `c${i}`),
    );
  });

  it('marks a call that is gone (404) as not enriched', async () => {
    const [result] = await new Enricher({
      api: { getCall: async () => null },
      enabled: true,
      concurrency: 1,
    }).enrich([listed('a')]);
    expect(result).toMatchObject({ ok: true, enrichment: null, gone: true });
  });

  it('turns a single-call body the schema rejects into a skippable item error', async () => {
    const [result] = await new Enricher({
      api: { getCall: async () => ({ isPrivate: 'yes' }) },
      enabled: true,
      concurrency: 1,
    }).enrich([listed('a')]);
    expect(result).toMatchObject({
      ok: false,
      error: { code: 'ITEM_SCHEMA_REJECTED', disposition: 'skippable' },
    });
  });

  it('turns a persistently malformed single-call body into a skippable item error', async () => {
    const api = { getCall: async () => Promise.reject(new FatalError('API_MALFORMED_BODY', 'garbled')) };
    const [result] = await new Enricher({ api, enabled: true, concurrency: 1 }).enrich([listed('a')]);
    expect(result).toMatchObject({ ok: false, error: { code: 'ITEM_SCHEMA_REJECTED' } });
  });

  it('fails the whole page on any other error and cancels the remaining requests', async () => {
    const started: string[] = [];
    const api = {
      getCall: async (uid: string, signal?: AbortSignal) => {
        started.push(uid);
        if (uid === 'c0') throw new RetriableError('API_UNAVAILABLE', 'down');
        await new Promise((_, reject) =>
          signal?.addEventListener('abort', () => reject(signal.reason as Error)),
        );
        return body;
      },
    };
    const enricher = new Enricher({ api, enabled: true, concurrency: 2 });
    await expect(enricher.enrich(Array.from({ length: 6 }, (_, i) => listed(`c${i}`)))).rejects.toMatchObject(
      { code: 'API_UNAVAILABLE' },
    );
    expect(started.length).toBeLessThan(6);
  });

  it('requests nothing when enrichment is off', async () => {
    const api = { getCall: async () => Promise.reject(new Error('must not be called')) };
    const result = await new Enricher({ api, enabled: false, concurrency: 1 }).enrich([listed('a')]);
    expect(result).toEqual([{ ok: true, listed: listed('a'), enrichment: null, gone: false }]);
  });
});

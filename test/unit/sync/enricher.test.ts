import { describe, expect, it } from 'vitest';
import { mapSingleCall } from '../../../src/api/call-mapper.js';
import { FatalError, RetriableError, SkippableError } from '../../../src/errors/index.js';
import { Enricher, sameVersion } from '../../../src/sync/enricher.js';
import type { ListedCall } from '../../../src/sync/model.js';

/** A single-call body as the API adapter maps it. */
const answer = (raw: Record<string, unknown>) => mapSingleCall(raw, 'a');
/** The version a single-call body describes. */
const version = (raw: Record<string, unknown>) => answer(raw).version;

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
        return answer({ ...body, conversationUid: uid });
      },
    };
    const result = await new Enricher({ api, enabled: true, concurrency: 3 }).enrich(
      Array.from({ length: 10 }, (_, i) => listed(`c${i}`)),
    );
    expect(peak).toBe(3);
    expect(result.map((r) => r.enrichment?.conversationUid)).toEqual(
      Array.from({ length: 10 }, (_, i) => `c${i}`),
    );
  });

  it('marks a call that is gone (404) as not enriched', async () => {
    const [result] = await new Enricher({
      api: { getCall: async () => null },
      enabled: true,
      concurrency: 1,
    }).enrich([listed('a')]);
    expect(result).toMatchObject({ enrichment: null, unenriched: { reason: 'gone' } });
  });

  it('keeps a call whose single-call body the schema rejects, unenriched, instead of dead-lettering it', async () => {
    const [result] = await new Enricher({
      api: { getCall: async () => answer({ isPrivate: 'yes' }) },
      enabled: true,
      concurrency: 1,
    }).enrich([listed('a')]);
    expect(result).toMatchObject({
      listed: listed('a'),
      enrichment: null,
      unenriched: { reason: 'invalid' },
    });
  });

  it('keeps a call the single-call API refuses with a 4xx, unenriched, with what the API said', async () => {
    const refused = new SkippableError('API_CALL_REFUSED', 'the calls API refused (HTTP 403: nope)');
    const api = { getCall: async () => Promise.reject(refused) };
    const [result] = await new Enricher({ api, enabled: true, concurrency: 1 }).enrich([listed('a')]);
    expect(result).toEqual({
      listed: listed('a'),
      enrichment: null,
      unenriched: { reason: 'refused', detail: 'the calls API refused (HTTP 403: nope)' },
    });
  });

  it('keeps a call whose single-call body is too large to read, unenriched, counted as invalid', async () => {
    const tooLarge = new SkippableError('API_CALL_TOO_LARGE', 'exceeds api.maxResponseBytes (10)');
    const api = { getCall: async () => Promise.reject(tooLarge) };
    const [result] = await new Enricher({ api, enabled: true, concurrency: 1 }).enrich([listed('a')]);
    expect(result?.unenriched).toEqual({ reason: 'invalid', detail: 'exceeds api.maxResponseBytes (10)' });
  });

  it('fails the page when a single-call body stays malformed, so the call is neither lost nor dead-lettered', async () => {
    const api = { getCall: async () => Promise.reject(new RetriableError('API_MALFORMED_BODY', 'garbled')) };
    await expect(
      new Enricher({ api, enabled: true, concurrency: 1 }).enrich([listed('a')]),
    ).rejects.toMatchObject({ code: 'API_MALFORMED_BODY', disposition: 'retriable' });
  });

  it('never mixes two versions: a single call with another updatedAt leaves the listed one unenriched', async () => {
    const api = { getCall: async () => answer({ ...body, updatedAt: '2024-03-01T12:00:00.000001Z' }) };
    const [result] = await new Enricher({ api, enabled: true, concurrency: 1 }).enrich([listed('a')]);
    expect(result).toMatchObject({ enrichment: null, unenriched: { reason: 'version_mismatch' } });
  });

  it('enriches when the single call carries the listed updatedAt, written with another precision or offset', async () => {
    const api = { getCall: async () => answer({ ...body, updatedAt: '2024-03-01T13:00:00.000+01:00' }) };
    const [result] = await new Enricher({ api, enabled: true, concurrency: 1 }).enrich([listed('a')]);
    expect(result).toMatchObject({ enrichment: { isPrivate: false }, unenriched: null });
  });

  it('fails the whole page at once on a fatal error and cancels the remaining requests', async () => {
    const started: string[] = [];
    const api = {
      getCall: async (uid: string, signal?: AbortSignal) => {
        started.push(uid);
        if (uid === 'c0') throw new FatalError('API_TLS', 'untrusted');
        await new Promise((_, reject) =>
          signal?.addEventListener('abort', () => reject(signal.reason as Error)),
        );
        return answer(body);
      },
    };
    const enricher = new Enricher({ api, enabled: true, concurrency: 2 });
    await expect(enricher.enrich(Array.from({ length: 6 }, (_, i) => listed(`c${i}`)))).rejects.toMatchObject(
      { code: 'API_TLS' },
    );
    expect(started.length).toBeLessThan(6);
  });

  it('requests nothing when enrichment is off', async () => {
    const api = { getCall: async () => Promise.reject(new Error('must not be called')) };
    const result = await new Enricher({ api, enabled: false, concurrency: 1 }).enrich([listed('a')]);
    expect(result).toEqual([{ listed: listed('a'), enrichment: null, unenriched: null }]);
  });
});

describe('sameVersion', () => {
  const at = '2024-03-01T12:00:00Z';
  it('takes a body without updatedAt as the listed version (it cannot tell)', () => {
    expect(sameVersion(at, version({}))).toBe(true);
    expect(sameVersion(at, version({ updatedAt: null }))).toBe(true);
  });

  it('compares instants exactly, not strings', () => {
    expect(sameVersion(at, version({ updatedAt: '2024-03-01T12:00:00.000000Z' }))).toBe(true);
    expect(sameVersion(at, version({ updatedAt: '2024-03-01T12:00:00.001Z' }))).toBe(false);
  });

  it('reads an updatedAt that is not a date-time as another version', () => {
    expect(sameVersion(at, version({ updatedAt: 'yesterday' }))).toBe(false);
    expect(sameVersion(at, version({ updatedAt: 17 }))).toBe(false);
  });
});

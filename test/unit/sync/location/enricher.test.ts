import { describe, expect, it } from 'vitest';
import { mapSingleCall } from '../../../../src/api/call-mapper.js';
import { FatalError, RetriableError, SkippableError } from '../../../../src/errors/index.js';
import { Enricher, sameVersion } from '../../../../src/sync/location/enricher.js';
import type { ListedCall } from '../../../../src/sync/model.js';

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
  it('stamps each answer with its clock and, on refresh, asks again only the enrichments answered before the bound', async () => {
    let now = 1_000;
    const asked: string[] = [];
    const api = {
      getCall: async (uid: string) => {
        asked.push(uid);
        return answer({
          ...body,
          uid,
          updatedAt: '2024-03-01T12:00:00Z',
          isPrivate: uid === 'a' && now > 1_000,
        });
      },
    };
    const enricher = new Enricher({
      api,
      enabled: true,
      concurrency: 1,
      clock: { now: () => now, random: () => 0, sleep: async () => {} },
    });
    const first = await enricher.enrich([listed('a')]);
    expect(first[0]?.answeredAtMs).toBe(1_000);
    now = 50_000;
    const later = await enricher.enrich([listed('b')]);
    const items = [...first, ...later];
    // Nothing older than 500: the page as it was, nothing asked.
    expect(await enricher.refresh(items, 500)).toBe(items);
    const refreshed = await enricher.refresh(items, 10_000);
    expect(asked).toEqual(['a', 'b', 'a']);
    expect(refreshed.map((i) => [i.listed.uid, i.enrichment?.isPrivate, i.answeredAtMs])).toEqual([
      ['a', true, 50_000],
      ['b', false, 50_000],
    ]);
  });

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

  it("fails the page on a transient failure once the other calls are done, and reuses their answers on the page's next attempt", async () => {
    const requested: string[] = [];
    let c2Fails = true;
    const api = {
      getCall: async (uid: string) => {
        requested.push(uid);
        if (uid === 'c2' && c2Fails)
          throw new RetriableError('API_UNAVAILABLE', 'the calls API failed 8 times');
        return answer({ ...body, conversationUid: uid });
      },
    };
    const enricher = new Enricher({ api, enabled: true, concurrency: 2 });
    const page = Array.from({ length: 6 }, (_, i) => listed(`c${i}`));
    await expect(enricher.enrich(page)).rejects.toMatchObject({ code: 'API_UNAVAILABLE' });
    expect([...requested].sort()).toEqual(['c0', 'c1', 'c2', 'c3', 'c4', 'c5']);

    requested.length = 0;
    c2Fails = false;
    const result = await enricher.enrich(page);
    expect(requested).toEqual(['c2']);
    expect(result.map((r) => r.enrichment?.conversationUid)).toEqual(['c0', 'c1', 'c2', 'c3', 'c4', 'c5']);
  });

  it('asks again for a call listed with another updatedAt (a newer version), not for the same one', async () => {
    const requested: string[] = [];
    const api = {
      getCall: async (uid: string) => {
        requested.push(uid);
        return answer(body);
      },
    };
    const enricher = new Enricher({ api, enabled: true, concurrency: 1 });
    await enricher.enrich([listed('a')]);
    await enricher.enrich([listed('a')]);
    await enricher.enrich([{ ...listed('a'), updatedAt: '2024-03-01T12:00:01Z' }]);
    expect(requested).toEqual(['a', 'a']);
  });

  it('asks again for a call changed within the same instant (same updatedAt, other listed fields): its privacy may have changed', async () => {
    const requested: string[] = [];
    const api = {
      getCall: async (uid: string) => {
        requested.push(uid);
        return answer(body);
      },
    };
    const enricher = new Enricher({ api, enabled: true, concurrency: 1 });
    await enricher.enrich([listed('a')]);
    await enricher.enrich([{ ...listed('a'), customerPhoneNumber: '+3' }]);
    expect(requested).toEqual(['a', 'a']);
  });

  it('publishes a poison call unenriched after poisonPageAttempts page attempts, the rest of its page enriched', async () => {
    const api = {
      getCall: async (uid: string) => {
        if (uid === 'poison')
          throw new RetriableError('API_UNAVAILABLE', 'the calls API failed 8 times: HTTP 503');
        return answer({ ...body, conversationUid: uid });
      },
    };
    const enricher = new Enricher({ api, enabled: true, concurrency: 2, poisonPageAttempts: 3 });
    const page = [listed('a'), listed('poison'), listed('b')];
    await expect(enricher.enrich(page)).rejects.toMatchObject({ code: 'API_UNAVAILABLE' });
    await expect(enricher.enrich(page)).rejects.toMatchObject({ code: 'API_UNAVAILABLE' });
    const result = await enricher.enrich(page);
    expect(result.map((r) => r.enrichment?.conversationUid ?? null)).toEqual(['a', null, 'b']);
    expect(result[1]?.unenriched).toMatchObject({ reason: 'unavailable' });
    expect(result[1]?.unenriched?.detail).toContain('HTTP 503');
  });

  it('strikes no call while the single-call endpoint answers nothing at all (an outage, not a poison call)', async () => {
    const api = {
      getCall: async () => Promise.reject(new RetriableError('API_UNAVAILABLE', 'down')),
    };
    const enricher = new Enricher({ api, enabled: true, concurrency: 2, poisonPageAttempts: 1 });
    for (let attempt = 0; attempt < 3; attempt++)
      await expect(enricher.enrich([listed('a'), listed('b')])).rejects.toMatchObject({
        code: 'API_UNAVAILABLE',
      });
  });

  it('does not count a refused token (API_UNAUTHORIZED) as a strike against the call', async () => {
    const api = {
      getCall: async (uid: string) => {
        if (uid === 'x') throw new RetriableError('API_UNAUTHORIZED', 'token refused after refresh');
        return answer(body);
      },
    };
    const enricher = new Enricher({ api, enabled: true, concurrency: 2, poisonPageAttempts: 1 });
    await expect(enricher.enrich([listed('a'), listed('x')])).rejects.toMatchObject({
      code: 'API_UNAUTHORIZED',
    });
  });

  it('forgets the oldest answers beyond reuseCapacity and the largest page', async () => {
    const requested: string[] = [];
    const api = {
      getCall: async (uid: string) => {
        requested.push(uid);
        return answer(body);
      },
    };
    const enricher = new Enricher({ api, enabled: true, concurrency: 1, reuseCapacity: 2 });
    // Pages of one call: three answers kept (reuseCapacity 2 + the largest page, 1).
    for (const uid of ['a', 'b', 'c', 'd']) await enricher.enrich([listed(uid)]);
    await enricher.enrich([listed('b'), listed('a')]);
    expect(requested).toEqual(['a', 'b', 'c', 'd', 'a']);
  });

  it("keeps the answers of a page larger than reuseCapacity for the page's retry: only the failed call is asked again", async () => {
    const requested: string[] = [];
    let failing = true;
    const api = {
      getCall: async (uid: string) => {
        requested.push(uid);
        if (uid === 'c50' && failing)
          throw new RetriableError('API_UNAVAILABLE', 'the calls API failed 8 times');
        return answer({ ...body, conversationUid: uid });
      },
    };
    const enricher = new Enricher({ api, enabled: true, concurrency: 4, reuseCapacity: 10 });
    const page = Array.from({ length: 100 }, (_, i) => listed(`c${i}`));
    await expect(enricher.enrich(page)).rejects.toMatchObject({ code: 'API_UNAVAILABLE' });
    expect(requested).toHaveLength(100);

    requested.length = 0;
    failing = false;
    const result = await enricher.enrich(page);
    expect(requested).toEqual(['c50']);
    expect(result.every((r) => r.enrichment !== null)).toBe(true);
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

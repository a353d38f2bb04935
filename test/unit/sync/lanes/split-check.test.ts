import { describe, expect, it } from 'vitest';
import { FatalError, RetriableError, SkippableError } from '../../../../src/errors/index.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { DEFAULT_LANE_SETTINGS } from '../../../../src/sync/lanes/lanes.js';
import { EMPTY_OFFSET, type MappedItem } from '../../../../src/sync/model.js';
import type { ListedPage, PageRequest, RequestHint } from '../../../../src/sync/ports.js';
import {
  probeSplit,
  SPLIT_CHECK_LIMIT,
  SPLIT_CHECK_PAGES,
  SplitCheck,
  splitCheckRefused,
} from '../../../../src/sync/lanes/split-check.js';
import { clockReading } from '../../../support/clock.js';
import { listedCall } from '../../../support/sync/prepared-page.js';

const LOC = '11111111-1111-1111-1111-111111111111';
const NOW = Date.parse('2026-11-24T12:00:00Z');

const dated = (uid: string, updatedAt: string): MappedItem => ({
  ok: true,
  call: listedCall(uid, updatedAt, LOC),
});

/** A listing that answers the scripted pages (or throws the scripted errors) in order, recording each request. */
function scripted(answers: (ListedPage | Error)[]) {
  const requests: { request: PageRequest; hint: RequestHint | undefined }[] = [];
  const api = {
    listPage: (request: PageRequest, _signal?: AbortSignal, hint?: RequestHint): Promise<ListedPage> => {
      requests.push({ request, hint });
      const answer = answers.shift();
      if (answer === undefined) throw new Error('no page scripted');
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
    },
  };
  return { api, requests };
}

const empty = (nextCursor: string | null): ListedPage => ({ items: [], nextCursor });

describe('probeSplit', () => {
  it('is the first dated item of an order=desc listing, asked at live priority, and T0 the first at or before it less the overlap, as the API wrote it', async () => {
    const { api, requests } = scripted([
      { items: [dated('a', '2026-11-24T11:59:00Z'), dated('b', '2026-11-24T11:00:00Z')], nextCursor: 'c1' },
    ]);
    expect(await probeSplit(api, LOC, 60_000)).toEqual({
      newest: '2026-11-24T11:59:00Z',
      until: '2026-11-24T11:00:00Z',
    });
    expect(requests).toEqual([
      {
        request: { kind: 'first', locationUid: LOC, since: null, order: 'desc', limit: SPLIT_CHECK_LIMIT },
        hint: { priority: 'live' },
      },
    ]);
  });

  it('takes the position of an item that failed to map but gave one', async () => {
    const rejected: MappedItem = {
      ok: false,
      error: new SkippableError('ITEM_SCHEMA_REJECTED', 'bad'),
      position: { uid: 'x', updatedAt: '2026-11-24T11:58:00Z' },
      payload: '{}',
    };
    const { api } = scripted([{ items: [rejected], nextCursor: null }]);
    expect(await probeSplit(api, LOC, 60_000)).toEqual({
      newest: '2026-11-24T11:58:00Z',
      until: '2026-11-24T11:58:00Z',
    });
  });

  it('follows empty pages by their cursor, up to the page limit, then answers no call', async () => {
    const { api, requests } = scripted(
      Array.from({ length: SPLIT_CHECK_PAGES + 1 }, (_, i) => empty(`c${i}`)),
    );
    expect(await probeSplit(api, LOC, 60_000)).toBeNull();
    expect(requests).toHaveLength(SPLIT_CHECK_PAGES);
    expect(requests[1]?.request).toEqual({
      kind: 'next',
      locationUid: LOC,
      cursor: 'c0',
      limit: SPLIT_CHECK_LIMIT,
    });
  });

  it('reads on for T0 while the calls it lists changed within the overlap, and takes the oldest listed when none is older', async () => {
    const within = (i: number) => dated(`w${i}`, `2026-11-24T11:59:${String(50 - i).padStart(2, '0')}+00:00`);
    const { api, requests } = scripted([
      { items: [within(0), within(1)], nextCursor: 'c0' },
      { items: [within(2), dated('old', '2026-11-24T11:58:30.5+00:00')], nextCursor: 'c1' },
    ]);
    expect(await probeSplit(api, LOC, 60_000)).toEqual({
      newest: '2026-11-24T11:59:50+00:00',
      until: '2026-11-24T11:58:30.5+00:00',
    });
    expect(requests).toHaveLength(2);
    const short = scripted([{ items: [within(0), within(1)], nextCursor: null }]);
    expect(await probeSplit(short.api, LOC, 60_000)).toEqual({
      newest: '2026-11-24T11:59:50+00:00',
      until: '2026-11-24T11:59:49+00:00',
    });
  });

  it('answers no call when the listing ends empty', async () => {
    const { api, requests } = scripted([empty('c0'), empty(null)]);
    expect(await probeSplit(api, LOC, 60_000)).toBeNull();
    expect(requests).toHaveLength(2);
  });
});

describe('splitCheckRefused', () => {
  it('calls a failure that is not retriable a refusal', () => {
    expect(splitCheckRefused(new FatalError('API_BAD_REQUEST', 'order=desc refused'))).toBe(true);
  });

  it('calls neither a transient failure, nor an abort, nor an error of unknown kind a refusal', () => {
    expect(splitCheckRefused(new RetriableError('API_UNAVAILABLE', 'later'))).toBe(false);
    expect(splitCheckRefused(new Error('bug'))).toBe(false);
    expect(splitCheckRefused(new FatalError('API_BAD_REQUEST', 'x'), AbortSignal.abort())).toBe(false);
  });
});

describe('SplitCheck', () => {
  function check(answers: (ListedPage | Error)[]) {
    const scriptedApi = scripted(answers);
    const splitCheck = new SplitCheck({
      locationUid: LOC,
      api: scriptedApi.api,
      lanes: DEFAULT_LANE_SETTINGS,
      startSince: null,
      bounds: { boundaryCap: 100 },
      clock: clockReading(() => NOW),
      logger: silentLogger(),
    });
    return { splitCheck, requests: scriptedApi.requests };
  }

  it('splits a location with nothing stored at T0, once per process', async () => {
    const { splitCheck, requests } = check([
      {
        items: [dated('a', '2026-11-24T11:59:00Z'), dated('b', '2026-11-24T11:30:00+00:00')],
        nextCursor: null,
      },
    ]);
    const split = await splitCheck.decide(EMPTY_OFFSET);
    expect(split).toMatchObject({
      since: '2026-11-24T11:30:00+00:00',
      history: { until: '2026-11-24T11:30:00+00:00' },
    });
    expect(splitCheck.decided).toBe(true);
    expect(await splitCheck.decide(EMPTY_OFFSET)).toBeNull();
    expect(requests).toHaveLength(1);
  });

  it('leaves a location unsplit, for good, when the API refuses the probe', async () => {
    const { splitCheck, requests } = check([new FatalError('API_BAD_REQUEST', 'order=desc refused')]);
    expect(await splitCheck.decide(EMPTY_OFFSET)).toBeNull();
    expect(await splitCheck.decide(EMPTY_OFFSET)).toBeNull();
    expect(requests).toHaveLength(1);
  });

  it('propagates a transient failure and checks again on the next page', async () => {
    const transient = new RetriableError('API_UNAVAILABLE', 'later');
    const { splitCheck } = check([
      transient,
      { items: [dated('a', '2026-11-24T11:59:00Z')], nextCursor: null },
    ]);
    await expect(splitCheck.decide(EMPTY_OFFSET)).rejects.toBe(transient);
    expect(splitCheck.decided).toBe(false);
    expect(await splitCheck.decide(EMPTY_OFFSET)).not.toBeNull();
  });

  it('asks nothing of a location caught up recently, nor with lanes unset', async () => {
    const { splitCheck, requests } = check([]);
    const recent = { ...EMPTY_OFFSET, since: '2026-11-24T11:59:00Z', watermark: '2026-11-24T11:59:00Z' };
    expect(await splitCheck.decide(recent)).toBeNull();
    const never = new SplitCheck({
      locationUid: LOC,
      api: scripted([]).api,
      lanes: undefined,
      startSince: null,
      bounds: { boundaryCap: 100 },
      clock: clockReading(() => NOW),
      logger: silentLogger(),
    });
    expect(await never.decide(EMPTY_OFFSET)).toBeNull();
    expect(requests).toHaveLength(0);
  });
});

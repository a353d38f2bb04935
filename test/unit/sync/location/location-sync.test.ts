/**
 * LocationSync: the pages of a traversal, the idle rule, the read-ahead, an abort, a resumption, the counts.
 */
import { describe, expect, it } from 'vitest';
import { RetriableError } from '../../../../src/errors/index.js';
import { PassThrough } from 'node:stream';
import { createLogger } from '../../../../src/logging/logger.js';
import { EMPTY_OFFSET, type LocationOffset } from '../../../../src/sync/model.js';
import type { PageCommit } from '../../../../src/sync/ports.js';
import { FakeCallsApi } from '../../../support/sync/fake-calls-api.js';
import { InMemorySink } from '../../../support/sync/in-memory-sink.js';
import { runTraversal } from '../../../support/sync/run-traversal.js';
import { build, call, group, LOC, metricValue, t } from '../../../support/sync/location-sync-fixture.js';

describe('LocationSync', () => {
  it('publishes a full backfill once, in order, with the offset committed per page', async () => {
    const data = [call('a', 1), ...group(7, 2), call('b', 3)];
    const { sync, sink } = build(new FakeCallsApi(data));
    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(data.map((c) => c.uid));
    expect(sink.commits).toBe(3);
    expect(sink.offsets.get(LOC)).toMatchObject({
      since: t(3),
      cursor: null,
      watermark: t(3),
      boundary: ['b'],
    });
    expect(Object.keys(sink.offsets.get(LOC)?.boundaryFingerprints ?? {})).toEqual(['b']);
    expect(sync.offset).toEqual(sink.offsets.get(LOC));
  });

  it('sends since only on the first page and the cursor alone afterwards', async () => {
    const api = new FakeCallsApi([call('a', 1), call('b', 2), call('c', 3), call('d', 4)]);
    const { sync } = build(api, { start: { ...EMPTY_OFFSET, since: t(0) } });
    await runTraversal(sync);
    expect(api.requests[0]).toEqual({ kind: 'first', locationUid: LOC, since: t(0), order: 'asc', limit: 3 });
    expect(api.requests[1]?.kind).toBe('next');
  });

  it("tells the sink each page's source: its traversal, page number and request position", async () => {
    const api = new FakeCallsApi([call('a', 1), call('b', 2), call('c', 3), call('d', 4)]);
    const { sync, sink } = build(api, { start: { ...EMPTY_OFFSET, since: t(0) } });
    const sources: PageCommit['source'][] = [];
    sink.beforeCommit = (commit) => {
      sources.push(commit.source);
    };
    await runTraversal(sync);
    const second = api.requests[1];
    expect(sources).toEqual([
      { traversalId: expect.any(String) as string, page: 1, since: t(0), cursor: null },
      {
        traversalId: sources[0]?.traversalId,
        page: 2,
        since: t(0),
        cursor: second?.kind === 'next' ? second.cursor : 'missing',
      },
    ]);
  });

  it('publishes nothing twice on the next traversal and picks up an update', async () => {
    const api = new FakeCallsApi([call('a', 1), ...group(4, 2)]);
    const { sync, sink, metrics } = build(api);
    await runTraversal(sync);
    await runTraversal(sync);
    expect(sink.calls).toHaveLength(5);
    expect(
      await metricValue(metrics, 'calls_connector_records_skipped_total', { reason: 'boundary_dedupe' }),
    ).toBe(4);
    api.upsert(call('a', 9));
    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(['a', 'g0', 'g1', 'g2', 'g3', 'a']);
    expect(sink.calls[5]?.updatedAt).toBe(t(9));
  });

  it('commits nothing for an idle traversal, and still commits the next one that moves the offset', async () => {
    const api = new FakeCallsApi([call('a', 1), ...group(4, 2), call('z', 3)]);
    const { sync, sink } = build(api);
    await runTraversal(sync);
    const commitsAfterBackfill = sink.commits;
    const stored = sink.offsets.get(LOC);

    await runTraversal(sync);
    await runTraversal(sync);
    expect(sink.commits).toBe(commitsAfterBackfill);
    expect(sync.totals.traversalsCompleted).toBe(3);
    expect(sync.offset).toEqual(stored);

    api.upsert(call('b', 9));
    await runTraversal(sync);
    expect(sink.commits).toBe(commitsAfterBackfill + 1);
    expect(sink.offsets.get(LOC)).toMatchObject({ since: t(9), watermark: t(9), boundary: ['b'] });
  });

  it('commits nothing for an idle traversal whose boundary spans several pages, and a restart from the stored offset publishes nothing twice', async () => {
    // Seven calls at the newest instant, three a page: every poll lists three pages of calls already published.
    const api = new FakeCallsApi([call('a', 1), ...group(7, 2)]);
    const { sync, sink } = build(api);
    await runTraversal(sync);
    const commitsAfterBackfill = sink.commits;
    const stored = sink.offsets.get(LOC);
    const requests = api.requests.length;

    await runTraversal(sync);
    expect(api.requests.length - requests).toBe(3);
    expect(sink.commits).toBe(commitsAfterBackfill);
    expect(sync.offset).toEqual(stored);

    // Stopped between two pages of an idle traversal: the store still holds no cursor, and the next run lists
    // the boundary again and publishes nothing of it.
    await sync.runPage();
    expect(sink.offsets.get(LOC)).toEqual(stored);
    const restarted = build(api, { sink, start: sink.offsets.get(LOC) ?? EMPTY_OFFSET });
    await runTraversal(restarted.sync);
    expect(sink.commits).toBe(commitsAfterBackfill);
    api.upsert(call('b', 9));
    await runTraversal(restarted.sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(['a', 'g0', 'g1', 'g2', 'g3', 'g4', 'g5', 'g6', 'b']);
  });

  it('logs an idle traversal at debug only, and a traversal that published at info', async () => {
    const lines: { level: number; msg: string }[] = [];
    const destination = new PassThrough();
    destination.on('data', (chunk: Buffer) => {
      for (const line of chunk
        .toString()
        .split('\n')
        .filter((l) => l !== ''))
        lines.push(JSON.parse(line) as { level: number; msg: string });
    });
    const logger = createLogger({ level: 'info', format: 'json', destination });
    const api = new FakeCallsApi([call('a', 1)]);
    const { sync } = build(api, { logger });
    await runTraversal(sync);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.map((l) => l.msg)).toEqual(['traversal complete']);
    await runTraversal(sync); // idle: the boundary record listed again, nothing new
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.map((l) => l.msg)).toEqual(['traversal complete']);
  });

  it('commits nothing for an idle first traversal of an empty location', async () => {
    const { sync, sink } = build(new FakeCallsApi([]));
    await runTraversal(sync);
    expect(sink.commits).toBe(0);
  });

  it('still commits an empty last page that clears a stored cursor', async () => {
    const api = new FakeCallsApi([call('a', 1), call('b', 2), call('c', 3), call('d', 4)]);
    api.omitted.add('d');
    const sink = new InMemorySink();
    await build(api, { sink }).sync.runPage();
    const stored = sink.offsets.get(LOC);
    expect(stored?.cursor).not.toBeNull();

    const resumed = build(api, { sink, start: stored ?? EMPTY_OFFSET });
    await runTraversal(resumed.sync);
    expect(sink.offsets.get(LOC)?.cursor).toBeNull();
    expect(sink.commits).toBe(2);
  });

  it('still commits an idle page after a rejected cursor, so the store forgets that cursor', async () => {
    const data = [call('a', 1), call('b', 2), call('c', 3)];
    const api = new FakeCallsApi(data);
    const sink = new InMemorySink();
    await build(api, { sink }).sync.runPage();
    await runTraversal(build(api, { sink, start: sink.offsets.get(LOC) ?? EMPTY_OFFSET }).sync);
    const idle = sink.offsets.get(LOC) ?? EMPTY_OFFSET;
    // A crashed run left a cursor with the same watermark; the API rejects it.
    const withCursor: LocationOffset = { ...idle, cursor: 'stale-cursor' };
    sink.offsets.set(LOC, withCursor);
    const commits = sink.commits;
    api.expireNextCursors = 1;

    await runTraversal(build(api, { sink, start: withCursor }).sync);
    expect(sink.commits).toBe(commits + 1);
    expect(sink.offsets.get(LOC)?.cursor).toBeNull();
  });

  it('follows short and empty pages while the cursor is set', async () => {
    const api = new FakeCallsApi([
      call('a', 1),
      call('b', 2),
      call('c', 3),
      call('d', 4),
      call('e', 5),
      call('f', 6),
      call('g', 7),
    ]);
    for (const uid of ['a', 'b', 'c', 'd']) api.omitted.add(uid);
    const { sync, sink } = build(api);
    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(['e', 'f', 'g']);
    expect(api.requests).toHaveLength(3);
  });

  it('lists and enriches the next page while the current one commits, and then uses it', async () => {
    const data = [1, 2, 3, 4, 5, 6, 7].map((n) => call(`c${n}`, n));
    const api = new FakeCallsApi(data);
    const sink = new InMemorySink();
    const seenDuringFirstCommit: { requests: number; gets: string[] }[] = [];
    sink.beforeCommit = async () => {
      if (seenDuringFirstCommit.length > 0) return;
      // Let the read-ahead run: it starts as the commit does.
      for (let turn = 0; turn < 20; turn++) await new Promise(setImmediate);
      seenDuringFirstCommit.push({ requests: api.requests.length, gets: [...api.gets] });
    };
    const { sync } = build(api, { sink });
    await sync.runPage();
    expect(seenDuringFirstCommit).toEqual([{ requests: 2, gets: ['c1', 'c2', 'c3', 'c4', 'c5', 'c6'] }]);

    await sync.runPage(); // the page read ahead: no new request for it
    expect(api.requests).toHaveLength(3); // and the one after it, read ahead in turn
    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(data.map((c) => c.uid));
    expect(api.requests).toHaveLength(3); // the last page read nothing ahead
  });

  it('drops the page read ahead when the commit fails, and lists it again from what is stored', async () => {
    const data = [1, 2, 3, 4, 5, 6].map((n) => call(`c${n}`, n));
    const api = new FakeCallsApi(data);
    const sink = new InMemorySink();
    sink.failNext(4); // every attempt of the first commit
    const { sync } = build(api, { sink });
    expect(await sync.runPage().catch((e: unknown) => e)).toBeInstanceOf(RetriableError);
    expect(api.requests).toHaveLength(2); // the first page and the one read ahead

    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(data.map((c) => c.uid));
    expect(api.requests.slice(2).map((r) => r.kind)).toEqual(['first', 'next']);
  });

  it('abandons a page before its commit when aborted', async () => {
    const { sync, sink } = build(new FakeCallsApi([call('a', 1)]));
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    await expect(sync.runPage(controller.signal)).rejects.toThrow();
    expect(sink.commits).toBe(0);
  });

  it('resumes an interrupted traversal from the stored cursor', async () => {
    const data = [call('a', 1), ...group(7, 2), call('b', 3)];
    const api = new FakeCallsApi(data);
    const sink = new InMemorySink();
    const first = build(api, { sink }).sync;
    await first.runPage();
    const stored = sink.offsets.get(LOC);
    expect(stored?.cursor).not.toBeNull();
    const second = build(api, { sink, start: stored ?? EMPTY_OFFSET }).sync;
    await runTraversal(second);
    expect(sink.calls.map((c) => c.uid)).toEqual(data.map((c) => c.uid));
  });

  it('counts pages, publications and completed traversals', async () => {
    const { sync, metrics } = build(
      new FakeCallsApi([call('a', 1), call('b', 2), call('c', 3), call('d', 4)]),
    );
    await runTraversal(sync);
    expect(await metricValue(metrics, 'calls_connector_pages_fetched_total')).toBe(2);
    expect(await metricValue(metrics, 'calls_connector_records_published_total')).toBe(4);
    expect(sync.totals).toMatchObject({ pages: 2, published: 4, traversalsCompleted: 1 });
    expect(
      await metricValue(metrics, 'calls_connector_location_last_success_timestamp_seconds'),
    ).toBeGreaterThan(0);
  });
});

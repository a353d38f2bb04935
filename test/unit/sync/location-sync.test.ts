import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY } from '../../../src/api/retry-policy.js';
import { InvalidCursorError } from '../../../src/sync/ports.js';
import { FatalError, RetriableError, SkippableError } from '../../../src/errors/index.js';
import { PassThrough } from 'node:stream';
import { createLogger, silentLogger, type Logger } from '../../../src/logging/logger.js';
import { ConnectorMetrics } from '../../../src/metrics/metrics.js';
import { Enricher } from '../../../src/sync/enricher.js';
import { LocationSync, type LocationSyncSettings } from '../../../src/sync/location-sync.js';
import { EMPTY_OFFSET, type LocationOffset } from '../../../src/sync/model.js';
import { MAX_RESTARTS_WITHOUT_PROGRESS } from '../../../src/sync/traversal-run.js';
import type { PageCommit } from '../../../src/sync/ports.js';
import { FakeCallsApi, type FakeCall } from '../../support/sync/fake-calls-api.js';
import { InMemorySink } from '../../support/sync/in-memory-sink.js';
import { testFingerprints } from '../../support/sync/fingerprints.js';
import { runTraversal } from '../../support/sync/run-traversal.js';

const LOC = '11111111-1111-1111-1111-111111111111';
const t = (second: number) => `2024-03-01T12:00:${String(second).padStart(2, '0')}Z`;
const call = (uid: string, second: number, extra: Partial<FakeCall> = {}): FakeCall => ({
  uid,
  locationUid: LOC,
  updatedAt: t(second),
  ...extra,
});

function build(
  api: FakeCallsApi,
  options: {
    sink?: InMemorySink;
    start?: LocationOffset;
    settings?: Partial<LocationSyncSettings>;
    enrich?: boolean;
    logger?: Logger;
  } = {},
) {
  const sink = options.sink ?? new InMemorySink();
  const metrics = new ConnectorMetrics();
  const sync = new LocationSync({
    locationUid: LOC,
    startOffset: options.start ?? EMPTY_OFFSET,
    api,
    enricher: new Enricher({ api, enabled: options.enrich ?? true, concurrency: 4 }),
    sink,
    metrics,
    logger: options.logger ?? silentLogger(),
    settings: {
      pageSize: 3,
      startSince: null,
      boundaryCap: 100,
      privacy: 'redact-unless-public',
      fingerprints: testFingerprints,
      commitRetry: { ...DEFAULT_RETRY_POLICY, maxAttempts: 4 },
      ...options.settings,
    },
    clock: { now: () => Date.now(), random: () => 0, sleep: async () => {} },
  });
  return { sync, sink, metrics };
}

async function metricValue(
  metrics: ConnectorMetrics,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  return (metric?.values ?? [])
    .filter((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val))
    .reduce((sum, v) => sum + v.value, 0);
}

const group = (n: number, second: number) => Array.from({ length: n }, (_, i) => call(`g${i}`, second));

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

  it('restarts from the watermark when the cursor expires, losing and doubling nothing', async () => {
    const data = [call('a', 1), ...group(7, 2), call('b', 3)];
    const api = new FakeCallsApi(data);
    const { sync, sink, metrics } = build(api);
    api.expireNextCursors = 1; // the first request has no cursor: the next page's (read ahead) expires
    await sync.runPage();
    const report = await sync.runPage();
    expect(report).toEqual({ complete: false, published: 0, lane: 'live' });
    expect(await metricValue(metrics, 'calls_connector_cursor_restarts_total')).toBe(1);
    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(data.map((c) => c.uid));
    expect(api.requests[2]).toMatchObject({ kind: 'first', since: t(2) });
  });

  it('restarts from the watermark when a stored cursor is rejected with a 4xx of unknown shape, and counts it', async () => {
    const data = [call('a', 1), ...group(4, 2), call('b', 3), call('c', 4)];
    const api = new FakeCallsApi(data);
    const first = build(api);
    await first.sync.runPage();
    await first.sync.runPage();
    // A new process (after kill -9) resumes from the stored offset; its cursor is no longer accepted.
    const stored = first.sink.offsets.get(LOC)!;
    expect(stored.cursor).not.toBeNull();
    api.listErrors.push(
      new InvalidCursorError({
        apiCode: null,
        status: 400,
        recognised: false,
        detail: 'HTTP 400: bad token',
      }),
    );
    const { sync, sink, metrics } = build(api, { sink: first.sink, start: stored });
    const before = api.requests.length; // the first process also read a page ahead
    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(data.map((c) => c.uid));
    expect(api.requests.slice(before, before + 2)).toMatchObject([
      { kind: 'next', cursor: stored.cursor },
      { kind: 'first', since: stored.watermark },
    ]);
    expect(
      await metricValue(metrics, 'calls_connector_cursor_restarts_total', { reason: 'rejected_4xx' }),
    ).toBe(1);
  });

  it('gives up for now after repeated cursor rejections without progress', async () => {
    const api = new FakeCallsApi([...group(7, 2)]);
    const { sync } = build(api);
    await sync.runPage();
    api.expireNextCursors = 100;
    const error = await runTraversal(sync).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetriableError);
    expect((error as RetriableError).code).toBe('CURSOR_RESTARTS_EXHAUSTED');
    expect(api.requests.filter((r) => r.kind === 'first').length).toBeLessThanOrEqual(
      MAX_RESTARTS_WITHOUT_PROGRESS + 2,
    );
  });

  it('stops with CURSOR_LOOP when an empty page returns the cursor just sent', async () => {
    const api = new FakeCallsApi([call('a', 1), call('b', 2), call('c', 3), call('d', 4)]);
    const first = build(api);
    await first.sync.runPage();
    const cursor = first.sync.offset.cursor;
    api.loopCursor = cursor;
    api.omitted.add('d');
    // Resumed from the stored offset: the first sync has already read its next page ahead.
    const { sync, sink } = build(api, { sink: first.sink, start: first.sink.offsets.get(LOC)! });
    const error = await sync.runPage().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FatalError);
    expect((error as FatalError).code).toBe('CURSOR_LOOP');
    expect(sink.offsets.get(LOC)?.cursor).toBe(cursor);
  });

  it('redacts private and unknown numbers and publishes public ones', async () => {
    const api = new FakeCallsApi([
      call('pub', 1, { isPrivate: false }),
      call('priv', 2, { isPrivate: true }),
      call('gone', 3),
    ]);
    api.gone.add('gone');
    const { sync, sink, metrics } = build(api);
    await runTraversal(sync);
    const byUid = new Map(sink.calls.map((c) => [c.uid, c]));
    expect(byUid.get('pub')).toMatchObject({
      customerPhoneNumber: '+1555pub',
      enriched: true,
      isPrivate: false,
      conversationUid: 'conv-pub',
    });
    expect(byUid.get('priv')).toMatchObject({
      customerPhoneNumber: null,
      customerPhoneNumberRedacted: true,
      isPrivate: true,
    });
    expect(byUid.get('gone')).toMatchObject({
      customerPhoneNumber: null,
      customerPhoneNumberRedacted: true,
      enriched: false,
    });
    expect(await metricValue(metrics, 'calls_connector_records_redacted_total')).toBe(2);
    expect(await metricValue(metrics, 'calls_connector_records_skipped_total', { reason: 'redacted' })).toBe(
      0,
    );
  });

  it('publishes a call whose single call is refused (4xx) unenriched and redacted, and counts it', async () => {
    const api = new FakeCallsApi([call('a', 1, { isPrivate: false }), call('b', 2, { isPrivate: false })]);
    api.getErrors.set('a', [new SkippableError('API_CALL_REFUSED', 'HTTP 403: not yours')]);
    const { sync, sink, metrics } = build(api);
    await runTraversal(sync);
    expect(sink.calls.map((c) => [c.uid, c.enriched, c.customerPhoneNumber])).toEqual([
      ['a', false, null],
      ['b', true, '+1555b'],
    ]);
    expect(sink.deadLetters).toEqual([]);
    expect(
      await metricValue(metrics, 'calls_connector_records_unenriched_total', { reason: 'refused' }),
    ).toBe(1);
  });

  it('fails the page on a transient single-call failure, then publishes the call enriched from the same offset', async () => {
    const api = new FakeCallsApi([call('a', 1, { isPrivate: false }), call('b', 2, { isPrivate: false })]);
    api.getErrors.set('b', [new RetriableError('API_MALFORMED_BODY', 'garbled 3 times')]);
    const { sync, sink } = build(api);
    await expect(sync.runPage()).rejects.toMatchObject({ code: 'API_MALFORMED_BODY' });
    expect(sink.calls).toEqual([]);
    expect(sink.deadLetters).toEqual([]);
    expect(sync.offset).toEqual(EMPTY_OFFSET);
    await runTraversal(sync);
    expect(sink.calls.map((c) => [c.uid, c.enriched, c.customerPhoneNumber])).toEqual([
      ['a', true, '+1555a'],
      ['b', true, '+1555b'],
    ]);
  });

  it('publishes the listed version unenriched when the single call is another version, never a mix', async () => {
    const api = new FakeCallsApi([call('a', 1, { isPrivate: false })]);
    api.getUpdatedAt.set('a', t(9));
    const { sync, sink, metrics } = build(api);
    await runTraversal(sync);
    expect(sink.calls).toEqual([
      expect.objectContaining({
        uid: 'a',
        updatedAt: t(1),
        enriched: false,
        isPrivate: null,
        conversationUid: null,
        startedAt: null,
        customerPhoneNumber: null,
      }),
    ]);
    expect(
      await metricValue(metrics, 'calls_connector_records_unenriched_total', { reason: 'version_mismatch' }),
    ).toBe(1);
  });

  it('publishes a tombstone instead of the unenriched record for a call GET reports gone, when configured', async () => {
    const api = new FakeCallsApi([call('kept', 1), call('gone', 2), call('kept2', 3)]);
    api.gone.add('gone');
    const { sync, sink } = build(api, { settings: { tombstoneGone: true } });
    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(['kept', 'kept2']);
    expect(sink.tombstones).toEqual(['gone']);
    expect(sink.offsets.get(LOC)?.watermark).toBe(t(3));
  });

  it('redacts every number and requests no single call when enrichment is off', async () => {
    const api = new FakeCallsApi([call('pub', 1, { isPrivate: false })]);
    const { sync, sink } = build(api, { enrich: false });
    await runTraversal(sync);
    expect(sink.calls[0]).toMatchObject({ customerPhoneNumber: null, enriched: false });
    expect(api.gets).toEqual([]);
  });

  it('dead-letters unmappable items with the page and goes on', async () => {
    const api = new FakeCallsApi([
      call('a', 1),
      call('x', 2, { raw: { updatedAt: t(2) } }),
      call('y', 3, { raw: { uid: 'y', updatedAt: t(3), isPrivate: 'maybe', customerPhoneNumber: '+1999' } }),
      call('b', 4),
    ]);
    const { sync, sink, metrics } = build(api);
    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(['a', 'b']);
    expect(sink.deadLetters.map((d) => d.code).sort()).toEqual(['ITEM_NO_UID', 'ITEM_SCHEMA_REJECTED']);
    expect(sink.deadLetters.every((d) => !d.payload.includes('+1999'))).toBe(true);
    expect(await metricValue(metrics, 'calls_connector_records_skipped_total', { reason: 'dlq' })).toBe(2);
  });

  it('dead-letters hostile items (10,000-deep nesting, a megabyte uid) and goes on, keyed by uid when usable', async () => {
    let deep: unknown[] = [];
    for (let i = 0; i < 10_000; i++) deep = [deep];
    const api = new FakeCallsApi([
      call('a', 1),
      call('n', 2, { raw: { uid: 'n', updatedAt: t(2), locationPhoneNumber: deep } }),
      call('u', 3, { raw: { uid: 'u'.repeat(1_000_000), updatedAt: t(3) } }),
      call('b', 4),
    ]);
    const { sync, sink } = build(api);
    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(['a', 'b']);
    expect(sink.deadLetters.map((d) => [d.code, d.uid])).toEqual([
      ['ITEM_SCHEMA_REJECTED', 'n'],
      ['ITEM_UID_TOO_LONG', null],
    ]);
    for (const dead of sink.deadLetters)
      expect(dead.payload.length + dead.message.length).toBeLessThan(4_000);
  });

  it('does not dead-letter a rejected item twice at the boundary', async () => {
    const api = new FakeCallsApi([call('y', 3, { raw: { uid: 'y', updatedAt: t(3), isPrivate: 'maybe' } })]);
    const { sync, sink } = build(api);
    await runTraversal(sync);
    await runTraversal(sync);
    expect(sink.deadLetters).toHaveLength(1);
  });

  it('retries the same page after a retriable sink failure without doubling', async () => {
    const data = [call('a', 1), call('b', 2), call('c', 3), call('d', 4)];
    const sink = new InMemorySink();
    sink.failNext(2);
    const { sync } = build(new FakeCallsApi(data), { sink });
    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(['a', 'b', 'c', 'd']);
  });

  it("takes an ambiguous commit that went through for stored, as the sink's read-back shows", async () => {
    const data = [call('a', 1), call('b', 2), call('c', 3), call('d', 4)];
    const sink = new InMemorySink();
    sink.failNext(1, { ambiguous: true });
    const { sync } = build(new FakeCallsApi(data), { sink });
    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('goes on from a page whose last allowed commit attempt went through although its reply was lost, doubling nothing', async () => {
    // A lost EndTxn reply on the last attempt: the sink's read-back decides, so the next page starts from
    // what is stored, not from the stale in-memory position.
    const data = [call('a', 1), call('b', 2), call('c', 3), call('d', 4)];
    const sink = new InMemorySink();
    sink.failNext(1, { ambiguous: true });
    const { sync } = build(new FakeCallsApi(data), {
      sink,
      settings: { commitRetry: { ...DEFAULT_RETRY_POLICY, maxAttempts: 1 } },
    });
    await sync.runPage();
    expect(sync.offset).toEqual(sink.offsets.get(LOC));
    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('waits for a read-back that failed after an ambiguous commit, and publishes nothing twice', async () => {
    const data = [call('a', 1), call('b', 2), call('c', 3), call('d', 4)];
    const sink = new InMemorySink();
    sink.failNext(1, { ambiguous: true });
    sink.failReadsNext(2);
    const { sync } = build(new FakeCallsApi(data), { sink });
    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('commits again a rejected page that leaves the offset unchanged, since the store cannot tell it went through', async () => {
    // Everything at the boundary instant was published before; the page's only news is an item without a
    // uid (dead letter). Its offset equals the starting one, so the reloaded offset proves nothing.
    const start: LocationOffset = { since: t(5), cursor: null, watermark: t(5), boundary: ['a'] };
    const api = new FakeCallsApi([call('a', 5), call('x', 6, { raw: { updatedAt: t(6) } })]);
    const sink = new InMemorySink(new Map([[LOC, start]]));
    sink.failNext(1);
    const { sync } = build(api, { sink, start });
    await runTraversal(sync);
    expect(sink.deadLetters.map((d) => d.code)).toEqual(['ITEM_NO_UID']);
  });

  it('does not retry a page on a sink that will commit nothing more (taken over, closing): it fails at once', async () => {
    // A handover waits for the page in flight: retrying on an ended sink held it for the whole revoke bound.
    const sink = new InMemorySink();
    const ended = new RetriableError('KAFKA_PARTITION_TAKEN_OVER', 'taken over');
    sink.failNext(3, { error: ended, ended: true });
    let attempts = 0;
    sink.beforeCommit = () => void attempts++;
    const { sync } = build(new FakeCallsApi([call('a', 1)]), { sink });
    await expect(sync.runPage()).rejects.toBe(ended);
    expect(attempts).toBe(1);
    expect(sink.calls).toEqual([]);
  });

  it('propagates a fatal sink failure', async () => {
    const sink = new InMemorySink();
    sink.failNext(1, { error: new FatalError('KAFKA_NOT_PERMITTED', 'denied') });
    const { sync } = build(new FakeCallsApi([call('a', 1)]), { sink });
    await expect(runTraversal(sync)).rejects.toMatchObject({ code: 'KAFKA_NOT_PERMITTED' });
    expect(sink.calls).toEqual([]);
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

  it('continues from the offset another writer stored while the sink re-initialised its producer, publishing that page once', async () => {
    const data = Array.from({ length: 9 }, (_, i) => call(`c${i}`, i + 1));
    const api = new FakeCallsApi(data);
    const sink = new InMemorySink();
    const old = build(api, { sink }).sync;
    await old.runPage();
    // Another writer (a newer instance) takes the next page, then this sink's producer is rebuilt.
    const newer = build(api, { sink, start: sink.offsets.get(LOC) ?? EMPTY_OFFSET }).sync;
    await newer.runPage();
    sink.producerGeneration += 1;

    await runTraversal(old);
    expect(sink.calls.map((c) => c.uid)).toEqual(data.map((c) => c.uid));
  });

  it('does not move back to a stale read of the store after the producer re-initialised (a read behind pending transaction markers)', async () => {
    // Issue 20, point 3: the offsets topic still read as before p1; adopting that read republished p1. A
    // read-back older than the committed offset is never adopted: nothing of the refused page was written, so
    // it is committed again under the new generation (once), and the location moves on from its own offset.
    const data = Array.from({ length: 9 }, (_, i) => call(`c${i}`, i + 1));
    const sink = new InMemorySink();
    const { sync } = build(new FakeCallsApi(data), { sink });
    await sync.runPage();
    await sync.runPage();
    const committed = sync.offset;
    sink.producerGeneration += 1; // the next page is read back instead of written
    sink.readStaleNext(2); // reads the offset before the committed one
    await sync.runPage();
    expect(sink.readBacks).toBe(1);
    expect(sync.offset).not.toEqual(committed);
    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(data.map((c) => c.uid));
  });

  it('never adopts a stale read after a commit of unknown outcome: the sink reads again until the read decides', async () => {
    const data = Array.from({ length: 9 }, (_, i) => call(`c${i}`, i + 1));
    const sink = new InMemorySink();
    const { sync } = build(new FakeCallsApi(data), { sink });
    await sync.runPage();
    await sync.runPage();
    sink.failNext(1, { ambiguous: true });
    sink.readStaleNext(2, 2); // reads the offset before the committed one
    await sync.runPage();
    expect(sink.readBacks).toBe(3);
    expect(sync.offset).toEqual(sink.offsets.get(LOC));
    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(data.map((c) => c.uid));
  });

  it('commits a page the sink did not write as prepared under an older producer generation again, once its read-back shows nothing moved', async () => {
    const data = Array.from({ length: 9 }, (_, i) => call(`c${i}`, i + 1));
    const sink = new InMemorySink();
    const { sync } = build(new FakeCallsApi(data), { sink });
    await sync.runPage();
    let bumped = false;
    sink.beforeCommit = () => {
      if (!bumped) sink.producerGeneration += 1; // re-initialised while the page was being prepared
      bumped = true;
    };
    await runTraversal(sync);
    expect(sink.calls.map((c) => c.uid)).toEqual(data.map((c) => c.uid));
    expect(sink.commits).toBe(3);
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

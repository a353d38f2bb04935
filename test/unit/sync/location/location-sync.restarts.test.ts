/**
 * LocationSync after a rejected cursor or a cursor loop (traversal-run.ts: the restart rule, the loop error).
 */
import { describe, expect, it } from 'vitest';
import { InvalidCursorError } from '../../../../src/sync/ports.js';
import { FatalError, RetriableError } from '../../../../src/errors/index.js';
import { MAX_RESTARTS_WITHOUT_PROGRESS } from '../../../../src/sync/location/traversal-run.js';
import { FakeCallsApi } from '../../../support/sync/fake-calls-api.js';
import { runTraversal } from '../../../support/sync/run-traversal.js';
import { build, call, group, LOC, metricValue, t } from '../../../support/sync/location-sync-fixture.js';

describe('LocationSync restarts', () => {
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
    api.expireNextCursors = 100; // every cursor, from the first page's (read ahead while it commits)
    await sync.runPage();
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
});

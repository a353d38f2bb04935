/**
 * LocationSync and the commit outcomes (commit-driver.ts, commit-outcome.ts): retries, ambiguous and superseded commits, generations.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY } from '../../../../src/api/retry-policy.js';
import { FatalError, RetriableError } from '../../../../src/errors/index.js';
import { EMPTY_OFFSET, type LocationOffset } from '../../../../src/sync/model.js';
import { FakeCallsApi } from '../../../support/sync/fake-calls-api.js';
import { InMemorySink } from '../../../support/sync/in-memory-sink.js';
import { runTraversal } from '../../../support/sync/run-traversal.js';
import { build, call, LOC, t } from '../../../support/sync/location-sync-fixture.js';

describe('LocationSync commits', () => {
  it("observes each published change's delay once its page is stored, never for an attempt that failed", async () => {
    const data = [call('a', 1), call('b', 2), call('c', 3), call('d', 4)];
    const sink = new InMemorySink();
    sink.failNext(2);
    const { sync, metrics } = build(new FakeCallsApi(data), { sink });
    const observed = async () =>
      (await metrics.changeCommitDelay.get()).values.find(
        (v) =>
          v.metricName === 'calls_connector_change_commit_delay_seconds_count' && v.labels.lane === 'live',
      )?.value ?? 0;
    const atCommit: number[] = [];
    sink.beforeCommit = async () => {
      atCommit.push(await observed());
    };
    await runTraversal(sync);
    // Two failed attempts and two stored pages (3 calls, then 1): nothing observed before a page was stored.
    expect(atCommit).toEqual([0, 0, 0, 3]);
    expect(await observed()).toBe(4);
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
});

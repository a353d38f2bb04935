import { describe, expect, it } from 'vitest';
import { RetriableError } from '../../../src/errors/index.js';
import { EMPTY_OFFSET } from '../../../src/sync/model.js';
import type { CommitOutcome, PageCommit, RecordSink } from '../../../src/sync/ports.js';
import { publishedCallsFeed, reportingPublished } from '../../../src/webhooks/published-calls.js';
import { LruUidLocations } from '../../../src/webhooks/uid-locations.js';

function commitOf(uids: string[]): PageCommit {
  const calls = uids.map((uid) => ({ uid, updatedAt: '2026-01-01T00:00:00.000Z' }));
  return { locationUid: 'L1', calls, deadLetters: [], offset: EMPTY_OFFSET } as unknown as PageCommit;
}

function sinkAnswering(outcome: CommitOutcome): RecordSink & { closed: boolean } {
  return {
    closed: false,
    commitPage: () => Promise.resolve(outcome),
    generation: () => 7,
    close() {
      this.closed = true;
      return Promise.resolve();
    },
  };
}

describe('reporting what the sinks publish', () => {
  it('tells the uid index and the ledger the calls of a stored page', async () => {
    const index = new LruUidLocations(10);
    const ledger: Array<[string, number]> = [];
    const feed = publishedCallsFeed(index, { published: (uid, at) => ledger.push([uid, at]) });
    const sink = reportingPublished(sinkAnswering({ kind: 'stored' }), feed);
    expect(await sink.commitPage(commitOf(['c1', 'c2']))).toEqual({ kind: 'stored' });
    expect(index.locationOf('c1')).toBe('L1');
    expect(index.locationOf('c2')).toBe('L1');
    expect(ledger).toEqual([
      ['c1', Date.parse('2026-01-01T00:00:00.000Z')],
      ['c2', Date.parse('2026-01-01T00:00:00.000Z')],
    ]);
  });

  it('reports nothing for a rejected or superseded page', async () => {
    const reported: string[] = [];
    const feed = {
      published: (_: string, calls: ReadonlyArray<{ uid: string }>) =>
        reported.push(...calls.map((c) => c.uid)),
    };
    const reason = new RetriableError('API_UNAVAILABLE', 'no');
    await reportingPublished(sinkAnswering({ kind: 'rejected', reason }), feed).commitPage(commitOf(['c1']));
    await reportingPublished(
      sinkAnswering({ kind: 'superseded', stored: EMPTY_OFFSET, reason }),
      feed,
    ).commitPage(commitOf(['c2']));
    expect(reported).toEqual([]);
  });

  it('keeps the sink generation and close of the sink it decorates', async () => {
    const inner = sinkAnswering({ kind: 'stored' });
    const sink = reportingPublished(inner, { published: () => undefined });
    expect(sink.generation?.()).toBe(7);
    await sink.close();
    expect(inner.closed).toBe(true);
  });
});

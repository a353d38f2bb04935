import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../../src/logging/logger.js';
import { LiveLane } from '../../../../src/sync/lanes/live-lane.js';
import { EMPTY_OFFSET, type LocationOffset } from '../../../../src/sync/model.js';
import { TraversalRun } from '../../../../src/sync/location/traversal-run.js';
import { clockReading } from '../../../support/clock.js';
import { preparedPage } from '../../../support/sync/prepared-page.js';

const NOW = Date.parse('2026-11-24T12:00:00Z');
const T0 = '2026-11-24T11:00:00Z';
const split: LocationOffset = {
  ...EMPTY_OFFSET,
  since: T0,
  history: { ...EMPTY_OFFSET, until: T0 },
};

function lane() {
  const notified: string[][] = [];
  const completed: boolean[] = [];
  const live = new LiveLane({
    listener: { liveCommitted: (calls) => notified.push(calls.map((c) => c.uid)) },
    counters: { traversalCompleted: (_startedAt, _now, caughtUp) => completed.push(caughtUp ?? true) },
    logger: silentLogger(),
    clock: clockReading(() => NOW),
  });
  return { live, notified, completed };
}

describe('LiveLane', () => {
  it("asks for live priority for a split location's live lane, and for an unsplit one once caught up", () => {
    const { live } = lane();
    expect(live.hint(split, 0)).toEqual({ priority: 'live' });
    expect(live.hint(EMPTY_OFFSET, 0)).toEqual({ priority: 'backfill' });
    expect(live.hint(EMPTY_OFFSET, 1)).toEqual({ priority: 'live' });
  });

  it('publishes its pages whole and carries no live-window mark', () => {
    const { live } = lane();
    const page = preparedPage([{ uid: 'a', updatedAt: T0 }]);
    expect(live.keep(page)).toEqual({ kept: page, superseded: 0 });
    expect(live.aheadMark()).toBeUndefined();
  });

  it('tells the history lane what each committed page published', () => {
    const { live, notified } = lane();
    const prepared = preparedPage([{ uid: 'a', updatedAt: T0 }]);
    const call = { ...prepared.enriched[0]!.listed, enriched: false, customerPhoneNumberRedacted: true };
    live.committed({
      from: EMPTY_OFFSET,
      request: { kind: 'first', locationUid: 'loc', since: null, order: 'asc', limit: 10 },
      listed: { items: [], nextCursor: null },
      prepared,
      page: {
        calls: [call],
        deadLetters: [],
        tombstones: [],
        redacted: 1,
        unenriched: new Map(),
        unenrichedExamples: [],
      },
      superseded: 0,
    });
    expect(notified).toEqual([['a']]);
  });

  it('counts a completed traversal as caught up only when no history lane is left behind it', () => {
    const { live, completed } = lane();
    const traversal = new TraversalRun('loc', 'live', NOW - 10, silentLogger());
    live.traversalEnded(traversal, NOW, split);
    live.traversalEnded(traversal, NOW, EMPTY_OFFSET);
    expect(completed).toEqual([false, true]);
  });
});

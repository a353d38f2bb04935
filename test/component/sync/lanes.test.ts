/**
 * Lanes against the sandbox (real HTTPS client, the sandbox's keyset cursors): a history lane that meets
 * refused cursors inside a group of calls sharing one instant, larger than its pages, while the live lane
 * publishes changes to members of that group and the process crashes now and then.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_FAULTS } from '../../../packages/sandbox/src/index.js';
import { DEFAULT_LANE_SETTINGS } from '../../../src/sync/lanes/lanes.js';
import type { LocationSync } from '../../../src/sync/location/location-sync.js';
import { compareDateTimes } from '../../../src/time/instant.js';
import { counterValue } from '../../support/kafka.js';
import { InMemorySink } from '../../support/sync/in-memory-sink.js';
import { locationSync, sandboxSuite } from '../../support/sync/sandbox-harness.js';

/** A small seeded generator (LCG): the same seed replays the same run. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

describe('lanes against the sandbox', () => {
  const suite = sandboxSuite(
    {
      data: {
        locations: 4,
        callsPerLocation: 240,
        sameInstantGroups: { count: 1, size: 140 },
        privateRatio: 0.3,
      },
    },
    { pageSize: 100 },
  );

  it('reads a history lane through refused cursors inside a same-instant group, crashes and live changes to its members, losing nothing and never taking a call back', async () => {
    for (const [index, location] of suite.sandbox.locations.entries()) {
      const random = seeded(index + 1);
      const sink = new InMemorySink();
      const open = (): LocationSync =>
        locationSync(suite.harness, location, sink, {
          lanes: { ...DEFAULT_LANE_SETTINGS, historyPageSize: 20 },
        });
      let sync = open();
      const group = (() => {
        const sizes = new Map<string, string[]>();
        for (const c of suite.sandbox.admin.truth(location))
          sizes.set(c.updatedAt, [...(sizes.get(c.updatedAt) ?? []), c.uid]);
        return [...sizes.values()].sort((a, b) => b.length - a.length)[0] ?? [];
      })();
      expect(group.length).toBeGreaterThan(100);
      await sync.runPage(); // splits the location
      expect(sync.hasHistory).toBe(true);
      for (let step = 0; step < 400 && (sync.hasHistory || step < 20); step++) {
        const action = random();
        if (action < 0.1) sync = open();
        else if (action < 0.3) suite.sandbox.admin.setFaults({ cursorRejectionRate: 1 });
        else if (action < 0.4) {
          const uid = group[Math.floor(random() * group.length)] ?? '';
          suite.sandbox.admin.upsertCall({ uid, locationUid: location });
        }
        const lane = random() < 0.6 ? 'history' : 'live';
        await sync.runPage(undefined, lane).catch(() => undefined);
        suite.sandbox.admin.setFaults({ cursorRejectionRate: DEFAULT_FAULTS.cursorRejectionRate });
      }
      for (let i = 0; i < 50 && sync.hasHistory; i++)
        await sync.runPage(undefined, 'history').catch(() => undefined);
      for (let i = 0; i < 10; i++)
        if ((await sync.runPage().catch(() => ({ complete: false }))).complete) break;
      expect(sync.hasHistory).toBe(false);

      const published = sink.callsOf(location);
      const seen = new Set(published.map((c) => `${c.uid}@${c.updatedAt}`));
      const lost = suite.sandbox.admin
        .truth(location)
        .filter((c) => !seen.has(`${c.uid}@${c.updatedAt}`))
        .map((c) => `${c.uid}@${c.updatedAt}`);
      const newest = new Map<string, string>();
      const regressed: string[] = [];
      for (const c of published) {
        const before = newest.get(c.uid);
        if (before !== undefined && compareDateTimes(c.updatedAt, before) < 0)
          regressed.push(`${c.uid}@${c.updatedAt}`);
        else newest.set(c.uid, c.updatedAt);
      }
      expect({ location, lost, regressed }).toEqual({ location, lost: [], regressed: [] });
    }
    // The refused cursors were met (each restarts a lane from its watermark, boundary kept). A history page
    // reads a same-instant group through in one page (group-read.ts), so history follows fewer cursors.
    expect(await counterValue(suite.harness.metrics.cursorRestarts)).toBeGreaterThan(5);
  });
});

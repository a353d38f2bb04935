import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/logging/logger.js';
import { ConnectorMetrics } from '../../../src/metrics/metrics.js';
import type { Assignment } from '../../../src/kafka/group/partition-ownership.js';
import { PartitionHandover, type PartitionSink } from '../../../src/runtime/partition-handover.js';
import type { LocationSync } from '../../../src/sync/location-sync.js';
import { EMPTY_OFFSET, type LocationOffset } from '../../../src/sync/model.js';
import { ManualClock } from '../../support/clock.js';

/** Partition p holds the locations `p-a` and `p-b`, except partition 5 which holds none. */
const byPartition = new Map([0, 1, 2, 3, 4].map((p) => [p, [`${p}-a`, `${p}-b`]] as const));

function assignment(partitions: number[], extra: Partial<Assignment> = {}): Assignment {
  return { partitions, generationId: null, fresh: false, rebalanceStartedAt: 0, ...extra };
}

function setup(options: { failOpen?: Set<number> } = {}) {
  const events: string[] = [];
  const takenOver = new Map<number, () => void>();
  const scheduled = new Set<string>();
  const clock = new ManualClock(1_000);
  const metrics = new ConnectorMetrics();
  const handover = new PartitionHandover({
    locationsByPartition: byPartition,
    metrics,
    logger: silentLogger(),
    clock,
    revokeBoundMs: 5_000,
    retryDelayMs: 10_000,
    scheduler: {
      add: (syncs) => {
        for (const sync of syncs) scheduled.add(sync.locationUid);
        events.push(`add ${syncs.map((s) => s.locationUid).join(',')}`);
      },
      remove: (uids) => {
        const list = [...uids];
        for (const uid of list) scheduled.delete(uid);
        events.push(`remove ${list.join(',')}`);
        return Promise.resolve();
      },
    },
    work: {
      openSink: (partition, onTakenOver) => {
        events.push(`open ${partition}`);
        if (options.failOpen?.has(partition)) return Promise.reject(new Error('Kafka unavailable'));
        takenOver.set(partition, onTakenOver);
        const sink: PartitionSink = {
          commitPage: () => Promise.resolve({ kind: 'stored' as const }),
          close: () => {
            events.push(`close ${partition}`);
            return Promise.resolve();
          },
        };
        return Promise.resolve(sink);
      },
      loadOffsets: (partitions) => {
        events.push(`read ${partitions.join(',')}`);
        const offsets = new Map<string, LocationOffset>();
        for (const p of partitions) offsets.set(`${p}-a`, { ...EMPTY_OFFSET, since: `since-${p}` });
        return Promise.resolve(offsets);
      },
      syncFor: (locationUid, partition, offset) => {
        events.push(`sync ${locationUid}@${partition} from ${offset?.since ?? 'nothing'}`);
        return { locationUid } as LocationSync;
      },
    },
  });
  return { handover, events, scheduled, takenOver, clock, metrics };
}

describe('PartitionHandover', () => {
  it('opens the sink of each partition taken over (fencing its former owner) before reading it, then schedules its locations from what it read', async () => {
    const { handover, events, scheduled, metrics } = setup();
    handover.onAssignment(assignment([0, 1, 5], { rebalanceStartedAt: 250 }));
    await handover.idle();
    expect(events.slice(0, 3).sort()).toEqual(['open 0', 'open 1', 'read 0,1'].sort());
    expect(events.indexOf('read 0,1')).toBeGreaterThan(
      Math.max(events.indexOf('open 0'), events.indexOf('open 1')),
    );
    expect(events).toContain('sync 0-a@0 from since-0');
    expect(events).toContain('sync 0-b@0 from nothing');
    expect([...scheduled].sort()).toEqual(['0-a', '0-b', '1-a', '1-b']);
    // Partition 5 holds no location: owned, but no producer and no read.
    expect(handover.partitions).toEqual([0, 1, 5]);
    expect(events).not.toContain('open 5');
    expect((await metrics.ownedPartitions.get()).values[0]?.value).toBe(3);
    expect((await metrics.ownedLocations.get()).values[0]?.value).toBe(4);
    const handovers = (await metrics.locationHandover.get()).values.find((v) =>
      v.metricName?.endsWith('_sum'),
    );
    expect(handovers?.value).toBeCloseTo(2 * 0.75);
  });

  it('unschedules a revoked partition locations before closing its sink, and keeps what stays assigned', async () => {
    const { handover, events, scheduled, metrics } = setup();
    handover.onAssignment(assignment([0, 1]));
    await handover.idle();
    metrics.observeHighWater('0-a', 1_000);
    metrics.observeHighWater('1-a', 2_000);
    events.length = 0;
    handover.onAssignment(assignment([1, 2]));
    await handover.idle();
    expect(events.indexOf('remove 0-a,0-b')).toBeLessThan(events.indexOf('close 0'));
    expect(events).not.toContain('open 1');
    expect(events).toContain('open 2');
    expect([...scheduled].sort()).toEqual(['1-a', '1-b', '2-a', '2-b']);
    // The revoked location's freshness is its new owner's to report.
    const fresh = (await metrics.freshness.get()).values.map((v) => v.labels.location);
    expect(fresh).toEqual(['1-a']);
  });

  it('takes every partition over again after joining as a new member (it was expelled: nothing it held is its own)', async () => {
    const { handover, events } = setup();
    handover.onAssignment(assignment([0, 1]));
    await handover.idle();
    events.length = 0;
    handover.onAssignment(assignment([0, 1], { fresh: true }));
    await handover.idle();
    expect(events.filter((e) => e.startsWith('close')).sort()).toEqual(['close 0', 'close 1']);
    expect(events.filter((e) => e.startsWith('open')).sort()).toEqual(['open 0', 'open 1']);
  });

  it('drops a partition taken over by another instance quietly, counted, and takes it again only once two heartbeats confirm it is still assigned here', async () => {
    const { handover, events, scheduled, takenOver, metrics } = setup();
    handover.onAssignment(assignment([0, 1]));
    await handover.idle();
    events.length = 0;
    takenOver.get(0)!();
    await handover.idle();
    expect(events).toEqual(['remove 0-a,0-b', 'close 0']);
    expect([...scheduled].sort()).toEqual(['1-a', '1-b']);
    expect((await metrics.partitionsTakenOver.get()).values[0]?.value).toBe(1);
    handover.onHeartbeat();
    await handover.idle();
    expect(events).not.toContain('open 0');
    handover.onHeartbeat();
    await handover.idle();
    expect(events).toContain('open 0');
    expect([...scheduled].sort()).toEqual(['0-a', '0-b', '1-a', '1-b']);
  });

  it('does not take a dropped partition again once a new assignment moved it away', async () => {
    const { handover, events, takenOver } = setup();
    handover.onAssignment(assignment([0, 1]));
    await handover.idle();
    takenOver.get(0)!();
    await handover.idle();
    handover.onAssignment(assignment([1]));
    await handover.idle();
    events.length = 0;
    handover.onHeartbeat();
    handover.onHeartbeat();
    await handover.idle();
    expect(events).toEqual([]);
  });

  it('tries a partition whose producer could not start again after the retry delay, while it stays assigned', async () => {
    const failOpen = new Set([1]);
    const { handover, events, scheduled, clock } = setup({ failOpen });
    handover.onAssignment(assignment([0, 1]));
    await handover.idle();
    expect([...scheduled].sort()).toEqual(['0-a', '0-b']);
    expect(handover.partitions).toEqual([0]);
    failOpen.clear();
    await clock.sleeping();
    clock.advance(10_000);
    await new Promise((resolve) => setImmediate(resolve));
    await handover.idle();
    expect(events.filter((e) => e === 'open 1')).toHaveLength(2);
    expect([...scheduled].sort()).toEqual(['0-a', '0-b', '1-a', '1-b']);
  });

  it('lets everything go at close', async () => {
    const { handover, events, scheduled } = setup();
    handover.onAssignment(assignment([0, 1]));
    await handover.idle();
    await handover.close();
    expect(scheduled.size).toBe(0);
    expect(events.filter((e) => e.startsWith('close')).sort()).toEqual(['close 0', 'close 1']);
    expect(handover.partitions).toEqual([]);
  });
});

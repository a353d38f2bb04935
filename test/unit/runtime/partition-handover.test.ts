import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/logging/logger.js';
import { testMetrics } from '../../support/metrics.js';
import type { Assignment } from '../../../src/kafka/group/instance-presence.js';
import { PartitionHandover, type PartitionSink } from '../../../src/runtime/partition-handover.js';
import type { LocationSync } from '../../../src/sync/location/location-sync.js';
import { EMPTY_OFFSET, type LocationOffset } from '../../../src/sync/model.js';
import { ManualClock } from '../../support/clock.js';

/** Partition p holds the locations `p-a` and `p-b`, except partition 5 which holds none. */
const byPartition = new Map([0, 1, 2, 3, 4].map((p) => [p, [`${p}-a`, `${p}-b`]] as const));

function assignment(partitions: number[], extra: Partial<Assignment> = {}): Assignment {
  return { partitions, generationId: null, fresh: false, rebalanceStartedAt: 0, ...extra };
}

/**
 * A handover over recording ports. `scopes`: 'partition' (distributed: one sink per partition) or 'connector'
 * (single mode: one sink for every partition); a scope's events name its partitions (`open 0,1`).
 */
function setup(options: { failOpen?: Set<number>; failRead?: { count: number }; scopes?: 'connector' } = {}) {
  const events: string[] = [];
  const takenOver = new Map<number, () => void>();
  const scheduled = new Set<string>();
  const clock = new ManualClock(1_000);
  const metrics = testMetrics();
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
    ports: {
      scopesOf: (partitions) =>
        options.scopes === 'connector' ? [[...partitions]] : partitions.map((p) => [p]),
      openSink: (scope, onTakenOver) => {
        const name = scope.join(',');
        events.push(`open ${name}`);
        if (scope.some((p) => options.failOpen?.has(p) === true))
          return Promise.reject(new Error('Kafka unavailable'));
        for (const p of scope) takenOver.set(p, onTakenOver);
        const sink: PartitionSink = {
          commitPage: () => Promise.resolve({ kind: 'stored' as const }),
          close: () => {
            events.push(`close ${name}`);
            return Promise.resolve();
          },
        };
        return Promise.resolve(sink);
      },
      loadOffsets: (partitions) => {
        events.push(`read ${partitions.join(',')}`);
        if (options.failRead !== undefined && options.failRead.count > 0) {
          options.failRead.count -= 1;
          return Promise.reject(new Error('read timed out'));
        }
        const offsets = new Map<string, LocationOffset>();
        for (const p of partitions) offsets.set(`${p}-a`, { ...EMPTY_OFFSET, since: `since-${p}` });
        return Promise.resolve(offsets);
      },
      syncFor: (locationUid, offset) => {
        events.push(`sync ${locationUid} from ${offset?.since ?? 'nothing'}`);
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
    expect(events).toContain('sync 0-a from since-0');
    expect(events).toContain('sync 0-b from nothing');
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

  it('lets every partition go at close, closing their sinks and leaving the stopped scheduler its locations', async () => {
    const { handover, events, scheduled } = setup();
    handover.onAssignment(assignment([0, 1]));
    await handover.idle();
    await handover.close();
    expect(events.filter((e) => e.startsWith('close')).sort()).toEqual(['close 0', 'close 1']);
    expect(handover.partitions).toEqual([]);
    // The scheduler has stopped: its locations stay listed, so status() after close shows their final offsets.
    expect(events.some((e) => e.startsWith('remove'))).toBe(false);
    expect([...scheduled].sort()).toEqual(['0-a', '0-b', '1-a', '1-b']);
  });
});

describe('PartitionHandover.reconfigure (the configured locations changed while running)', () => {
  /** byPartition with `2-c` added to partition 2, `1-b` removed, and partition 5 given `5-a`. */
  const reloaded = new Map<number, readonly string[]>([
    [0, ['0-a', '0-b']],
    [1, ['1-a']],
    [2, ['2-a', '2-b', '2-c']],
    [3, ['3-a', '3-b']],
    [4, ['4-a', '4-b']],
    [5, ['5-a']],
  ]);

  it('unschedules the locations removed, schedules the ones added from their stored offsets, and leaves the others alone', async () => {
    const { handover, events, scheduled, metrics } = setup();
    handover.onAssignment(assignment([0, 1, 2]));
    await handover.idle();
    events.length = 0;
    const outcome = await handover.reconfigure(reloaded);
    expect(outcome).toEqual({ added: ['2-c'], removed: ['1-b'] });
    expect(events).toEqual(['remove 1-b', 'read 2', 'sync 2-c from nothing', 'add 2-c']);
    expect([...scheduled].sort()).toEqual(['0-a', '0-b', '1-a', '2-a', '2-b', '2-c']);
    expect(handover.locations).toBe(6);
    expect((await metrics.ownedLocations.get()).values[0]?.value).toBe(6);
  });

  it('takes over a held partition that held no location once it holds one (its sink opened before its offsets are read)', async () => {
    const { handover, events, scheduled } = setup();
    handover.onAssignment(assignment([0, 5]));
    await handover.idle();
    expect(events).not.toContain('open 5');
    events.length = 0;
    const outcome = await handover.reconfigure(reloaded);
    expect(outcome).toEqual({ added: ['5-a'], removed: [] });
    expect(events.indexOf('open 5')).toBeLessThan(events.indexOf('read 5'));
    expect(scheduled.has('5-a')).toBe(true);
  });

  it('gives later takeovers the new locations, and touches nothing when the same configuration is applied again', async () => {
    const { handover, events, scheduled } = setup();
    handover.onAssignment(assignment([0]));
    await handover.idle();
    await handover.reconfigure(reloaded);
    events.length = 0;
    expect(await handover.reconfigure(reloaded)).toEqual({ added: [], removed: [] });
    expect(events).toEqual([]);
    handover.onAssignment(assignment([0, 1, 2]));
    await handover.idle();
    expect([...scheduled].sort()).toEqual(['0-a', '0-b', '1-a', '2-a', '2-b', '2-c']);
  });

  it('adds to the one sink of single mode, reading only the partitions that gained a location', async () => {
    const { handover, events, scheduled } = setup({ scopes: 'connector' });
    await handover.assignFixed([0, 1, 2, 3, 4, 5]);
    events.length = 0;
    expect(await handover.reconfigure(reloaded)).toEqual({ added: ['2-c', '5-a'], removed: ['1-b'] });
    expect(events).toEqual([
      'remove 1-b',
      'read 2,5',
      'sync 2-c from nothing',
      'add 2-c',
      'sync 5-a from since-5',
      'add 5-a',
    ]);
    expect(scheduled.size).toBe(11);
  });

  it('keeps the removals and adds nothing when the offsets cannot be read, so the same call again adds what is missing', async () => {
    const failRead = { count: 0 };
    const { handover, scheduled } = setup({ failRead });
    handover.onAssignment(assignment([1, 2]));
    await handover.idle();
    failRead.count = 1;
    await expect(handover.reconfigure(reloaded)).rejects.toThrow('read timed out');
    expect([...scheduled].sort()).toEqual(['1-a', '2-a', '2-b']);
    expect(await handover.reconfigure(reloaded)).toEqual({ added: ['2-c'], removed: [] });
    expect([...scheduled].sort()).toEqual(['1-a', '2-a', '2-b', '2-c']);
  });
});

describe('PartitionHandover in single mode (one fixed assignment, one producer scope)', () => {
  it('opens one sink for every partition before reading, then schedules every location, counting no rebalance and no handover', async () => {
    const { handover, events, scheduled, metrics } = setup({ scopes: 'connector' });
    await handover.assignFixed([5, 0, 1, 2, 3, 4]);
    expect(events.slice(0, 2)).toEqual(['open 0,1,2,3,4,5', 'read 0,1,2,3,4,5']);
    expect(events).toContain('sync 3-a from since-3');
    expect(scheduled.size).toBe(10);
    expect(handover.partitions).toEqual([0, 1, 2, 3, 4, 5]);
    expect((await metrics.ownedPartitions.get()).values[0]?.value).toBe(6);
    expect((await metrics.ownedLocations.get()).values[0]?.value).toBe(10);
    expect((await metrics.rebalances.get()).values[0]?.value ?? 0).toBe(0);
    const handovers = (await metrics.locationHandover.get()).values.find((v) =>
      v.metricName?.endsWith('_count'),
    );
    expect(handovers?.value ?? 0).toBe(0);
  });

  it('rejects a takeover whose sink cannot start, holding nothing, so the start can wait and try again', async () => {
    const failOpen = new Set([2]);
    const { handover, events, scheduled } = setup({ scopes: 'connector', failOpen });
    await expect(handover.assignFixed([0, 1, 2, 3, 4, 5])).rejects.toThrow('Kafka unavailable');
    expect(handover.partitions).toEqual([]);
    expect(scheduled.size).toBe(0);
    expect(events).not.toContain('read 0,1,2,3,4,5');

    failOpen.clear();
    await handover.assignFixed([0, 1, 2, 3, 4, 5]);
    expect(handover.partitions).toEqual([0, 1, 2, 3, 4, 5]);
    expect(scheduled.size).toBe(10);
  });

  it('closes the sink it opened when the offsets cannot be read, and rejects holding nothing', async () => {
    const { handover, events, scheduled } = setup({ scopes: 'connector', failRead: { count: 1 } });
    await expect(handover.assignFixed([0, 1, 2, 3, 4, 5])).rejects.toThrow('read timed out');
    expect(events).toEqual(['open 0,1,2,3,4,5', 'read 0,1,2,3,4,5', 'close 0,1,2,3,4,5']);
    expect(handover.partitions).toEqual([]);
    expect(scheduled.size).toBe(0);
  });

  it('closes the one sink once at close, leaving every location listed with its final offset', async () => {
    const { handover, events, scheduled } = setup({ scopes: 'connector' });
    await handover.assignFixed([0, 1, 2, 3, 4, 5]);
    events.length = 0;
    await handover.close();
    expect(events.filter((e) => e.startsWith('close'))).toEqual(['close 0,1,2,3,4,5']);
    expect(events.some((e) => e.startsWith('remove'))).toBe(false);
    expect(scheduled.size).toBe(10);
    expect(handover.partitions).toEqual([]);
  });
});

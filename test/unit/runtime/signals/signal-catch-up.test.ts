/**
 * SignalCatchUp: the end offsets read for the partitions newly owned, including one owned while a read is under
 * way; a failed read tried again after a backoff on the clock; `released` once the reader's position reaches them.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../../src/logging/logger.js';
import { SignalCatchUp, type CatchUpReader } from '../../../../src/runtime/signals/signal-catch-up.js';
import { deferred, idles, type Deferred } from '../../../support/async.js';
import { ManualClock } from '../../../support/clock.js';

function catchUp() {
  const clock = new ManualClock(0);
  const owned = new Set<number>();
  const positions = new Map<number, bigint>();
  const reads: Array<Deferred<Map<number, bigint>>> = [];
  let released = 0;
  const reader: CatchUpReader = {
    position: (partition) => positions.get(partition) ?? 0n,
    endOffsets: () => {
      const read = deferred<Map<number, bigint>>();
      reads.push(read);
      return read.promise;
    },
  };
  const subject = new SignalCatchUp({
    topic: 'offsets-signals',
    ownsPartition: (partition) => owned.has(partition),
    partitionCount: () => 3,
    reader: () => reader,
    released: () => (released += 1),
    backoff: { initialDelayMs: 1_000, maxDelayMs: 1_000, multiplier: 1, jitter: 0 },
    clock,
    logger: silentLogger(),
  });
  return { subject, clock, owned, positions, reads, released: () => released };
}

describe('the signals catch-up after a handover', () => {
  it('reads the end of a partition owned while an earlier read is under way, and releases each once reached', async () => {
    const c = catchUp();
    c.owned.add(0);
    void c.subject.observe();
    await idles();
    expect(c.reads).toHaveLength(1);
    // Partition 1 comes to be owned while the read for partition 0 is under way.
    c.owned.add(1);
    void c.subject.observe();
    c.reads[0]?.resolve(
      new Map([
        [0, 4n],
        [1, 1n],
      ]),
    );
    await idles();
    // That read was made before partition 1 was owned: another one is made for it.
    expect(c.reads).toHaveLength(2);
    expect(c.subject.answers(1)).toBe(false);
    c.reads[1]?.resolve(
      new Map([
        [0, 9n],
        [1, 2n],
      ]),
    );
    await idles();
    c.positions.set(0, 4n);
    c.positions.set(1, 2n);
    c.subject.moved();
    expect(c.subject.answers(0)).toBe(true);
    expect(c.subject.answers(1)).toBe(true);
    expect(c.subject.answers(2)).toBe(false);
    expect(c.released()).toBe(1);
    // Owned no more: not answered, whatever the reader read.
    c.owned.delete(0);
    expect(c.subject.answers(0)).toBe(false);
  });

  it('tries a failed read of the end offsets again after its backoff, until closed', async () => {
    const c = catchUp();
    c.owned.add(2);
    void c.subject.observe();
    await idles();
    c.reads[0]?.reject(new Error('broker away'));
    await idles();
    expect(c.reads).toHaveLength(1);
    c.clock.advance(1_000);
    await idles();
    expect(c.reads).toHaveLength(2);
    c.reads[1]?.resolve(new Map([[2, 0n]]));
    await idles();
    expect(c.subject.answers(2)).toBe(true);

    c.owned.delete(2);
    void c.subject.observe();
    c.owned.add(2);
    void c.subject.observe();
    await idles();
    c.reads[2]?.reject(new Error('broker away'));
    await idles();
    c.subject.close();
    c.clock.advance(10_000);
    await idles();
    expect(c.reads).toHaveLength(3);
    expect(c.subject.answers(2)).toBe(false);
  });
});

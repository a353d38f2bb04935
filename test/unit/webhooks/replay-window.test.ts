import { describe, expect, it } from 'vitest';
import { ReplayWindow, replayKeepMs } from '../../../src/webhooks/replay-window.js';

describe('the replay window', () => {
  it('holds an id for keepMs after it was recorded, then forgets it', () => {
    const window = new ReplayWindow({ keepMs: 1_000, maxEntries: 10 });
    window.record('a', 5_000);
    expect(window.has('a', 5_000)).toBe(true);
    expect(window.has('a', 6_000)).toBe(true);
    expect(window.has('a', 6_001)).toBe(false);
    expect(window.size).toBe(0);
  });

  it('evicts the oldest ids beyond maxEntries, so its memory is bounded', () => {
    const window = new ReplayWindow({ keepMs: 60_000, maxEntries: 3 });
    for (const [i, id] of ['a', 'b', 'c', 'd'].entries()) window.record(id, 1_000 + i);
    expect(window.size).toBe(3);
    expect(window.has('a', 1_010)).toBe(false);
    expect(['b', 'c', 'd'].every((id) => window.has(id, 1_010))).toBe(true);
  });

  it('evicts by age before counting, so expired ids never push out live ones', () => {
    const window = new ReplayWindow({ keepMs: 100, maxEntries: 2 });
    window.record('old', 0);
    window.record('live', 150);
    window.record('new', 200);
    expect(window.has('live', 200)).toBe(true);
    expect(window.has('new', 200)).toBe(true);
  });

  it('moves an id recorded again to the back, dated anew', () => {
    const window = new ReplayWindow({ keepMs: 100, maxEntries: 10 });
    window.record('a', 0);
    window.record('b', 50);
    window.record('a', 90);
    expect(window.has('b', 160)).toBe(false);
    expect(window.has('a', 160)).toBe(true);
  });

  it('holds a key another instance took for keepMs from when that instance verified it, not from the read', () => {
    const window = new ReplayWindow({ keepMs: 1_000, maxEntries: 10 });
    window.record('local', 5_000);
    window.recordShared('shared', 4_500, 5_100);
    expect(window.has('shared', 5_500)).toBe(true);
    expect(window.has('shared', 5_501)).toBe(false);
    // Behind a newer entry it is not at the front, yet expires at its own time.
    expect(window.has('local', 5_501)).toBe(true);
  });

  it('records a shared key once: read again (another nudge of a fan-out, its own nudge read back) it keeps its time', () => {
    const window = new ReplayWindow({ keepMs: 1_000, maxEntries: 10 });
    window.record('mine', 5_000);
    window.recordShared('mine', 4_990, 5_010);
    window.recordShared('fan', 5_020, 5_030);
    window.recordShared('fan', 5_020, 5_900);
    expect(window.size).toBe(2);
    expect(window.has('mine', 6_000)).toBe(true);
    expect(window.has('fan', 6_020)).toBe(true);
    expect(window.has('fan', 6_021)).toBe(false);
  });

  it('leaves out a shared key that expired before it was read, and counts shared keys against maxEntries', () => {
    const window = new ReplayWindow({ keepMs: 1_000, maxEntries: 2 });
    window.recordShared('late', 1_000, 2_001);
    expect(window.size).toBe(0);
    window.record('a', 2_001);
    window.recordShared('b', 2_000, 2_002);
    window.recordShared('c', 2_000, 2_003);
    expect(window.has('a', 2_003)).toBe(false);
    expect(window.has('b', 2_003) && window.has('c', 2_003)).toBe(true);
  });

  it('refuses options that would hold nothing', () => {
    expect(() => new ReplayWindow({ keepMs: 1, maxEntries: 0 })).toThrow(RangeError);
    expect(() => new ReplayWindow({ keepMs: Number.NaN, maxEntries: 1 })).toThrow(RangeError);
  });
});

describe('the replay window without a signed timestamp', () => {
  it('keeps twice the tolerance with a signed timestamp, and until the count evicts a key once waived', () => {
    expect(replayKeepMs(300_000, false)).toBe(600_000);
    const window = new ReplayWindow({ keepMs: replayKeepMs(300_000, true), maxEntries: 2 });
    window.record('sig:a', 0);
    expect(window.has('sig:a', 10 * 365 * 86_400_000)).toBe(true);
    window.record('sig:b', 1);
    window.record('sig:c', 2);
    expect(window.has('sig:a', 3)).toBe(false);
  });
});

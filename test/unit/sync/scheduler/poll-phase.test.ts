import { describe, expect, it } from 'vitest';
import { phasedDelayMs, pollPhase, soonerDueAt } from '../../../../src/sync/scheduler/poll-phase.js';

const uid = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;

describe('pollPhase', () => {
  it('gives a location the same phase every time, a fraction of the interval', () => {
    const phase = pollPhase(uid(1));
    expect(pollPhase(uid(1))).toBe(phase);
    expect(phase).toBeGreaterThanOrEqual(0);
    expect(phase).toBeLessThan(1);
  });

  it('spreads 10,000 locations evenly: no tenth of the interval holds more than 11 % of them', () => {
    const tenths = new Array<number>(10).fill(0);
    for (let i = 0; i < 10_000; i++) {
      const tenth = Math.floor(pollPhase(uid(i)) * 10);
      tenths[tenth] = (tenths[tenth] ?? 0) + 1;
    }
    for (const count of tenths) {
      expect(count).toBeGreaterThan(900);
      expect(count).toBeLessThan(1_100);
    }
  });
});

describe('phasedDelayMs', () => {
  it('makes a location due at the next instant of its phase, however soon', () => {
    // Interval 60 s, phase 0.25: due at k × 60 s + 15 s.
    expect(phasedDelayMs(0, 60_000, 0.25)).toBe(15_000);
    expect(phasedDelayMs(14_000, 60_000, 0.25)).toBe(1_000);
    expect(phasedDelayMs(16_000, 60_000, 0.25)).toBe(59_000);
    // Completed exactly at a phase instant: the next one, an interval later.
    expect(phasedDelayMs(75_000, 60_000, 0.25)).toBe(60_000);
  });

  it('polls again at the phase instant that follows a long traversal, so no change made after it waits more than one interval', () => {
    // A backfill completes at 73 s, 2 s before its phase instant (75 s): a change made at 73.5 s is found by
    // the poll at 75 s, not 60 s later (the rule before waited at least half an interval: 135 s).
    expect(73_000 + phasedDelayMs(73_000, 60_000, 0.25)).toBe(75_000);
  });

  it('repeats exactly one interval apart once a poll completes soon after its phase', () => {
    let now = 7_000; // completes 2 s after its phase instant (5 s)
    const starts: number[] = [];
    for (let i = 0; i < 5; i++) {
      now += phasedDelayMs(now, 60_000, 5_000 / 60_000);
      starts.push(now);
      now += 300; // the idle poll itself
    }
    expect(starts).toEqual([65_000, 125_000, 185_000, 245_000, 305_000]);
  });

  it('always waits more than nothing and at most one interval, to an instant of the phase', () => {
    for (let now = 0; now < 200_000; now += 977)
      for (const phase of [0, 0.1, 0.5, 0.999]) {
        const delay = phasedDelayMs(now, 60_000, phase);
        expect(delay).toBeGreaterThan(0);
        expect(delay).toBeLessThanOrEqual(60_000);
        expect((now + delay - phase * 60_000) % 60_000).toBeCloseTo(0, 6);
      }
  });

  it('skips the phase instants sooner than minDelayMs, so reconciliation polls are at least half an interval apart', () => {
    // Interval 1,000, phase 0.3: instants at …, 1,300, 2,300, … A traversal completing at 1,100 would be due
    // again at 1,300 (200 ms later); with half an interval as the minimum it is due at 2,300.
    expect(phasedDelayMs(1_100, 1_000, 0.3)).toBe(200);
    expect(phasedDelayMs(1_100, 1_000, 0.3, 500)).toBe(1_200);
    // An instant at least minDelayMs away is kept.
    expect(phasedDelayMs(1_000, 1_000, 0.7, 500)).toBe(700);
    expect(phasedDelayMs(1_000, 1_000, 0.5, 500)).toBe(500);
  });

  it('stays on the phase and within [minDelayMs, minDelayMs + interval) for any completion time', () => {
    for (let now = 0; now < 5_000; now += 37) {
      const delay = phasedDelayMs(now, 1_000, 0.42, 500);
      expect(delay).toBeGreaterThanOrEqual(500);
      expect(delay).toBeLessThan(1_500);
      expect((now + delay - 420) % 1_000).toBeCloseTo(0, 6);
    }
  });

  it('refuses an interval that is not positive and a phase outside [0, 1)', () => {
    expect(() => phasedDelayMs(0, 0, 0.5)).toThrow(RangeError);
    expect(() => phasedDelayMs(0, 60_000, 1)).toThrow(RangeError);
    expect(() => phasedDelayMs(0, 60_000, -0.1)).toThrow(RangeError);
  });
});

describe('soonerDueAt', () => {
  it('moves a poll scheduled at a longer interval to its phase of the shorter one after its last traversal', () => {
    // Last traversal at 10 s, phase 0.5 of a 2 s interval: next phase instant 11 s; due at 60 s before.
    expect(soonerDueAt({ dueAt: 60_000, lastSuccessAt: 10_000, phase: 0.5 }, 2_000, 10_500, false)).toBe(
      11_000,
    );
    // That instant has passed: due now.
    expect(soonerDueAt({ dueAt: 60_000, lastSuccessAt: 10_000, phase: 0.5 }, 2_000, 30_000, false)).toBe(
      30_000,
    );
  });

  it('leaves a poll that is due already, never traversed, or due no later at the shorter interval', () => {
    expect(soonerDueAt({ dueAt: 5_000, lastSuccessAt: 1_000, phase: 0 }, 2_000, 6_000, false)).toBeNull();
    expect(soonerDueAt({ dueAt: 60_000, lastSuccessAt: null, phase: 0 }, 2_000, 6_000, false)).toBeNull();
    expect(
      soonerDueAt({ dueAt: 11_000, lastSuccessAt: 10_000, phase: 0.5 }, 2_000, 10_500, false),
    ).toBeNull();
  });

  it('keeps reconciliation polls half an interval apart', () => {
    // Phase instant 10.2 s is within half of 2 s of the last traversal: the next one, 12.2 s.
    expect(soonerDueAt({ dueAt: 60_000, lastSuccessAt: 10_000, phase: 0.1 }, 2_000, 10_000, true)).toBe(
      12_200,
    );
  });
});

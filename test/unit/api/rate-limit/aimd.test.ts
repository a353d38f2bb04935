import { describe, expect, it } from 'vitest';
import {
  DEFAULT_AIMD,
  initialAimd,
  onAnnounced,
  onAnswered,
  onRefused,
  type AimdSettings,
} from '../../../../src/api/rate-limit/aimd.js';

const settings: AimdSettings = { ...DEFAULT_AIMD, initialRate: 20, floor: 0.5, ceiling: 1000 };

describe('AIMD rate', () => {
  it('starts at the configured rate and grows by the slow-start share per request sent at full pace', () => {
    const start = initialAimd(settings);
    expect(start.rate).toBe(20);
    expect(onAnswered(start, settings, true, 0).rate).toBeCloseTo(20 + DEFAULT_AIMD.slowStartGrowth);
  });

  it('does not grow on requests sent below the pace (a rate never used is not trusted)', () => {
    const start = initialAimd(settings);
    expect(onAnswered(start, settings, false, 0)).toBe(start);
  });

  it('decreases multiplicatively on a refusal, once for the requests sent before the decrease', () => {
    const refused = onRefused(initialAimd(settings), settings, 1_000, 1_010);
    expect(refused.rate).toBeCloseTo(20 * DEFAULT_AIMD.decrease);
    expect(refused.slowStart).toBe(false);
    // Sent before the decrease: the old rate's doing, not counted again.
    expect(onRefused(refused, settings, 1_005, 1_020)).toBe(refused);
    // Sent after it: the new rate is still too high.
    expect(onRefused(refused, settings, 1_011, 1_030).rate).toBeCloseTo(20 * DEFAULT_AIMD.decrease ** 2);
  });

  it('after a refusal grows additively: increasePerSecond of the refused rate per second at full pace', () => {
    let state = onRefused(initialAimd({ ...settings, initialRate: 100 }), settings, 0, 0);
    // One second at full pace is `rate` requests.
    const before = state.rate;
    for (let i = 0; i < Math.round(before); i++) state = onAnswered(state, settings, true, 1);
    expect(state.rate - before).toBeCloseTo(DEFAULT_AIMD.increasePerSecond * 100, 1);
  });

  it('slow-starts again after slowStartAfterMs at full pace without a refusal (recovery after a 429 storm)', () => {
    let state = initialAimd(settings);
    for (let i = 0; i < 30; i++) state = onRefused(state, settings, i, i);
    expect(state.rate).toBe(0.5);
    const sunk = onAnswered(state, settings, true, 28 + DEFAULT_AIMD.slowStartAfterMs);
    expect(sunk.slowStart).toBe(false);
    const recovering = onAnswered(state, settings, true, 29 + DEFAULT_AIMD.slowStartAfterMs);
    expect(recovering.slowStart).toBe(true);
    expect(recovering.rate).toBeCloseTo(0.5 + DEFAULT_AIMD.slowStartGrowth);
  });

  it('stays within the floor and the ceiling', () => {
    let state = initialAimd(settings);
    for (let i = 0; i < 100; i++) state = onRefused(state, settings, i + 1, i + 1);
    expect(state.rate).toBe(0.5);
    state = initialAimd({ ...settings, ceiling: 25 });
    for (let i = 0; i < 1000; i++) state = onAnswered(state, { ...settings, ceiling: 25 }, true, 0);
    expect(state.rate).toBe(25);
  });

  it('goes just under an announced policy at once and never probes above it', () => {
    let state = onAnnounced(initialAimd(settings), settings, 60);
    expect(state.rate).toBeCloseTo(60 * DEFAULT_AIMD.announcedShare);
    for (let i = 0; i < 1000; i++) state = onAnswered(state, settings, true, 1);
    expect(state.rate).toBeCloseTo(60 * DEFAULT_AIMD.announcedShare);
  });

  it('keeps a lower learned rate when a policy is announced after refusals (instances sharing a quota)', () => {
    const refused = onRefused(initialAimd(settings), settings, 0, 0);
    expect(onAnnounced(refused, settings, 60).rate).toBeCloseTo(refused.rate);
  });
});

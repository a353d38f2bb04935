import type { FaultWindow } from '../../tools/chaos/freshness.js';

/** The fault phase's start in the chaos judge's tests (epoch ms). */
export const T0 = 1_000_000;

/** A fault from +0 s to +10 s, recovered 3 s after its end, its window until +60 s, a 2 s interval. */
export function faultWindow(overrides: Partial<FaultWindow> = {}): FaultWindow {
  return {
    kind: 'broker-kill',
    startMs: T0,
    endMs: T0 + 10_000,
    untilMs: T0 + 60_000,
    recoveryMs: 3_000,
    allowanceMs: 0,
    effectiveIntervalMs: 2_000,
    gaugeMaxMs: 2_000,
    ...overrides,
  };
}

import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../../tools/chaos/random.js';
import { handovers, recoveries } from '../../../tools/chaos/report.js';
import type { RunSummary } from '../../../tools/chaos/summary.js';
import {
  API_FAULTS,
  planFaults,
  PROCESS_FAULTS,
  profile,
  SIGNAL_FAULTS,
  TIMEOUTS,
} from '../../../tools/chaos/schedule.js';

describe('the chaos fault schedule', () => {
  it('is the same for the same seed and differs for another', () => {
    const full = profile('full');
    expect(planFaults(seededRandom(42), full)).toEqual(planFaults(seededRandom(42), full));
    expect(planFaults(seededRandom(43), full)).not.toEqual(planFaults(seededRandom(42), full));
  });

  it('holds every kind at least its minimum, and a full run at least 20 connector kills', () => {
    const full = profile('full');
    const plan = planFaults(seededRandom(1), full);
    for (const kind of [...PROCESS_FAULTS, ...API_FAULTS, ...SIGNAL_FAULTS])
      expect(plan.filter((f) => f.kind === kind).length).toBe(full.counts[kind]);
    const kills = plan.filter((f) => f.kind === 'connector-kill' || f.kind === 'refresh-kill');
    expect(kills.length).toBeGreaterThanOrEqual(20);
    expect(full.locations * full.callsPerLocation).toBeGreaterThanOrEqual(200_000);
    expect(full.locations).toBeGreaterThanOrEqual(200);
  });

  it('pauses past the transaction and request timeouts (long) and, distributed, past the session timeout (short)', () => {
    for (const distributed of [false, true])
      for (const name of ['short', 'full'] as const)
        for (let seed = 1; seed <= 20; seed++) {
          const plan = planFaults(seededRandom(seed), profile(name, undefined, distributed));
          for (const f of plan.filter((p) => p.kind === 'sigstop-long')) {
            expect(f.durationMs).toBeGreaterThan(TIMEOUTS.transactionMs);
            expect(f.durationMs).toBeGreaterThan(TIMEOUTS.requestMs);
          }
          if (distributed)
            for (const f of plan.filter((p) => p.kind === 'sigstop'))
              expect(f.durationMs).toBeGreaterThan(TIMEOUTS.sessionMs);
        }
  });

  it("holds issue 32's faults in both profiles and modes, a spent quota past the connector's longest wait", () => {
    for (const distributed of [false, true])
      for (const name of ['short', 'full'] as const)
        for (let seed = 1; seed <= 20; seed++) {
          const plan = planFaults(seededRandom(seed), profile(name, undefined, distributed));
          for (const kind of [
            'replacement-stopped',
            'api-grant-quota-spent',
            'api-limit-below-live-demand',
          ] as const)
            expect(plan.filter((f) => f.kind === kind).length, kind).toBeGreaterThanOrEqual(1);
          for (const f of plan.filter((p) => p.kind === 'api-grant-quota-spent'))
            expect(f.durationMs).toBeGreaterThan(TIMEOUTS.maxRetryAfterMs);
          if (distributed)
            for (const f of plan.filter((p) => p.kind === 'replacement-stopped'))
              expect(f.durationMs).toBeGreaterThan(TIMEOUTS.sessionMs);
        }
  });

  it('spreads the faults over the fault phase in time order', () => {
    const short = profile('short', 2);
    const plan = planFaults(seededRandom(9), short);
    const times = plan.map((f) => f.atMs);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(times[0]).toBeGreaterThan(0);
    expect(times.at(-1)).toBeLessThan(short.faultPhaseMs);
  });
});

describe('the chaos report', () => {
  it('gives the median and the maximum recovery per kind, leaving unrecovered faults out of both', () => {
    const fault = (kind: 'broker-kill' | 'sigstop', recoveryMs: number | null) => ({
      kind,
      atMs: 0,
      recoveryMs,
      detail: '',
    });
    const summary = {
      faults: [
        fault('broker-kill', 3000),
        fault('broker-kill', 1000),
        fault('broker-kill', 2000),
        fault('broker-kill', null),
        fault('sigstop', 500),
        fault('sigstop', 1500),
      ],
    } as RunSummary;
    expect(recoveries(summary)).toEqual([
      { kind: 'broker-kill', count: 4, recovered: 3, medianMs: 2000, maxMs: 3000 },
      { kind: 'sigstop', count: 2, recovered: 2, medianMs: 1000, maxMs: 1500 },
    ]);
  });

  it('gives handover times per process fault of a distributed run, leaving faults without a measure out', () => {
    const summary = {
      faults: [
        { kind: 'sigstop-long', atMs: 0, recoveryMs: 100, handoverMs: 11_000, detail: '' },
        { kind: 'sigstop-long', atMs: 0, recoveryMs: 100, handoverMs: 13_000, detail: '' },
        { kind: 'connector-kill', atMs: 0, recoveryMs: 100, handoverMs: null, detail: '' },
        { kind: 'api-5xx', atMs: 0, recoveryMs: 100, detail: '' },
      ],
    } as RunSummary;
    expect(handovers(summary)).toEqual([
      { kind: 'connector-kill', count: 1, recovered: 0, medianMs: null, maxMs: null },
      { kind: 'sigstop-long', count: 2, recovered: 2, medianMs: 12_000, maxMs: 13_000 },
    ]);
  });
});

import { describe, expect, it } from 'vitest';
import { isProcessFault } from '../../../../tools/chaos/faults/table.js';
import { seededRandom } from '../../../../tools/chaos/random.js';
import { planFaults, profile, WEBHOOK_FAULTS } from '../../../../tools/chaos/schedule.js';

describe('the chaos schedule, webhook faults', () => {
  it('plans every webhook fault kind in both profiles and both modes', () => {
    for (const distributed of [false, true])
      for (const name of ['short', 'full'] as const)
        for (let seed = 1; seed <= 10; seed++) {
          const chosen = profile(name, undefined, distributed);
          const plan = planFaults(seededRandom(seed), chosen);
          for (const kind of WEBHOOK_FAULTS) {
            expect(plan.filter((f) => f.kind === kind).length, `${name} ${kind}`).toBe(chosen.counts[kind]);
            expect(chosen.counts[kind], kind).toBeGreaterThanOrEqual(1);
          }
        }
  });

  it('keeps the short form within its length: a broker restart of at most 5 s, a duplicate window of at most 4 s', () => {
    for (let seed = 1; seed <= 50; seed++)
      for (const f of planFaults(seededRandom(seed), profile('short'))) {
        if (f.kind === 'webhook-broker-restart') expect(f.durationMs).toBeLessThanOrEqual(5000);
        if (f.kind === 'webhook-retry-pending') expect(f.durationMs).toBeLessThanOrEqual(4000);
        if (f.kind === 'webhook-receiver-kill') expect(f.durationMs).toBeLessThanOrEqual(2000);
      }
  });

  it('measures the handover after the faults that kill a process or the broker, not after the floods', () => {
    expect(isProcessFault('webhook-receiver-kill')).toBe(true);
    expect(isProcessFault('webhook-broker-restart')).toBe(true);
    expect(isProcessFault('webhook-forged-flood')).toBe(false);
    expect(isProcessFault('webhook-replay-flood')).toBe(false);
    expect(isProcessFault('webhook-retry-pending')).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import type { NudgeReaderHealth } from '../../../../src/kafka/nudges/nudge-reader.js';
import { Readiness } from '../../../../src/ops/readiness.js';
import { nudgeReaderCheck } from '../../../../src/runtime/steps/webhooks.js';

describe('the nudge reader readiness check', () => {
  it('makes the instance not ready while its nudge reader is stopped, naming why', async () => {
    let health: NudgeReaderHealth = { ok: true };
    const readiness = new Readiness([nudgeReaderCheck({ health: () => health })], { cacheMs: 0 });
    expect(await readiness.evaluate()).toEqual({ ok: true, checks: [{ name: 'nudge_reader', ok: true }] });
    health = {
      ok: false,
      detail:
        'NUDGE_READER_STOPPED: Not authorized to access group [GROUP_AUTHORIZATION_FAILED]; a new consumer in 4 s',
    };
    const report = await readiness.evaluate();
    expect(report.ok).toBe(false);
    expect(report.checks).toEqual([{ name: 'nudge_reader', ok: false, detail: health.detail }]);
  });
});

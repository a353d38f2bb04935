import { describe, expect, it } from 'vitest';
import { Readiness, type ReadinessResult } from '../../../src/ops/readiness.js';
import { ManualClock, clockReading } from '../../support/clock.js';

function counting(result: ReadinessResult) {
  const check = async () => {
    check.calls += 1;
    return result;
  };
  check.calls = 0;
  return check;
}

describe('Readiness', () => {
  it('is ready with no checks', async () => {
    expect(await new Readiness().evaluate()).toEqual({ ok: true, checks: [] });
  });

  it('is ready only when every check passes, and lists every check in order', async () => {
    const readiness = new Readiness([
      async () => ({ name: 'kafka', ok: true }),
      async () => ({ name: 'schema_registry', ok: false, detail: 'HTTP 503' }),
    ]);
    expect(await readiness.evaluate()).toEqual({
      ok: false,
      checks: [
        { name: 'kafka', ok: true },
        { name: 'schema_registry', ok: false, detail: 'HTTP 503' },
      ],
    });
  });

  it('never reports credentials that a failing check carries in its error message', async () => {
    const readiness = new Readiness([
      {
        name: 'schema_registry',
        check: async () => {
          throw new Error('GET http://svc:registry-pass-1@registry:8081/subjects failed');
        },
      },
    ]);
    const report = await readiness.evaluate();
    expect(report.checks[0]?.detail).toBe('GET http://[redacted]@registry:8081/subjects failed');
  });

  it('reports a check that throws as failed under its declared name with the error message', async () => {
    const readiness = new Readiness([
      {
        name: 'kafka',
        check: async () => {
          throw new Error('Connection timeout');
        },
      },
    ]);
    expect(await readiness.evaluate()).toEqual({
      ok: false,
      checks: [{ name: 'kafka', ok: false, detail: 'Connection timeout' }],
    });
  });

  it('reports a check that never settles as timed out on its clock instead of hanging the probe', async () => {
    const clock = new ManualClock();
    const readiness = new Readiness(
      [{ name: 'kafka', check: () => new Promise<ReadinessResult>(() => undefined) }],
      { timeoutMs: 20, clock },
    );
    const verdict = readiness.evaluate();
    await clock.sleeping();
    clock.advance(20);
    expect(await verdict).toEqual({
      ok: false,
      checks: [{ name: 'kafka', ok: false, detail: 'timed out after 20 ms' }],
    });
  });

  it('reuses a verdict within the cache period and re-evaluates after it', async () => {
    let now = 1_000;
    const check = counting({ name: 'kafka', ok: true });
    const readiness = new Readiness([check], { cacheMs: 5_000, clock: clockReading(() => now) });
    await readiness.evaluate();
    now += 4_999;
    await readiness.evaluate();
    expect(check.calls).toBe(1);
    now += 1;
    await readiness.evaluate();
    expect(check.calls).toBe(2);
  });

  it('caches a failing verdict too, so a storm of probes during an outage does not hammer the dependency', async () => {
    const check = counting({ name: 'kafka', ok: false, detail: 'down' });
    const readiness = new Readiness([check], { clock: clockReading(() => 0) });
    for (let i = 0; i < 10; i += 1) await readiness.evaluate();
    expect(check.calls).toBe(1);
  });

  it('runs checks once for probes that arrive while an evaluation is in flight', async () => {
    let release: () => void = () => undefined;
    let calls = 0;
    const readiness = new Readiness(
      [
        {
          name: 'kafka',
          check: () => {
            calls += 1;
            return new Promise<ReadinessResult>((resolve) => {
              release = () => resolve({ name: 'kafka', ok: true });
            });
          },
        },
      ],
      { cacheMs: 0 },
    );
    const probes = Array.from({ length: 20 }, () => readiness.evaluate());
    release();
    const reports = await Promise.all(probes);
    expect(calls).toBe(1);
    expect(reports.every((r) => r.ok)).toBe(true);
  });

  it('evaluates again on every call when the cache is off', async () => {
    const check = counting({ name: 'kafka', ok: true });
    const readiness = new Readiness([check], { cacheMs: 0 });
    await readiness.evaluate();
    await readiness.evaluate();
    expect(check.calls).toBe(2);
  });

  it('drops the cached verdict when a check is added', async () => {
    const readiness = new Readiness([async () => ({ name: 'kafka', ok: true })], {
      clock: clockReading(() => 0),
    });
    expect((await readiness.evaluate()).ok).toBe(true);
    readiness.add({ name: 'grant:default', check: async () => ({ name: 'grant:default', ok: false }) });
    expect((await readiness.evaluate()).ok).toBe(false);
  });

  it('rejects a non-positive timeout and a negative cache period at construction', () => {
    expect(() => new Readiness([], { timeoutMs: 0 })).toThrow(RangeError);
    expect(() => new Readiness([], { cacheMs: -1 })).toThrow(RangeError);
  });
});

import { describe, expect, it } from 'vitest';
import type { ApiFaultContext } from '../../../tools/chaos/faults/api-faults.js';
import { FAULT_UNITS, type FaultContext } from '../../../tools/chaos/faults/table.js';
import { seededRandom } from '../../../tools/chaos/random.js';
import { API_FAULTS, PROCESS_FAULTS, type FaultKind } from '../../../tools/chaos/schedule.js';

const ALL_KINDS: readonly FaultKind[] = [...PROCESS_FAULTS, ...API_FAULTS];

/** A sandbox admin that records every call and answers an empty body. */
function recordingAdmin(): { calls: [string, string, unknown][]; admin: ApiFaultContext['admin'] } {
  const calls: [string, string, unknown][] = [];
  return {
    calls,
    admin: {
      call: async <T>(method: string, path: string, body?: unknown): Promise<T> => {
        calls.push([method, path, body]);
        return {} as T;
      },
    },
  };
}

describe('the chaos fault table', () => {
  it('has a unit for every fault kind the schedule can plan', () => {
    for (const kind of ALL_KINDS) expect(typeof FAULT_UNITS[kind], kind).toBe('function');
  });

  it('names no kind the schedule does not plan', () => {
    expect(Object.keys(FAULT_UNITS).sort()).toEqual([...ALL_KINDS].sort());
  });

  it('runs an API fault window as its seed draws it, then restores the background faults', async () => {
    const { calls, admin } = recordingAdmin();
    const context = { admin, seed: 7 } as unknown as FaultContext;
    const result = await FAULT_UNITS['api-5xx'](
      { kind: 'api-5xx', atMs: 0, durationMs: 0, seed: 11 },
      seededRandom(11),
      context,
    );
    expect(calls.map(([method, path]) => `${method} ${path}`)).toEqual(['PUT faults', 'PUT faults']);
    const window = calls[0]?.[2] as { serverErrorRate: number };
    expect(window.serverErrorRate).toBeGreaterThanOrEqual(0.3);
    expect(window.serverErrorRate).toBeLessThanOrEqual(0.6);
    expect(calls[1]?.[2]).toMatchObject({ seed: 7, serverErrorRate: 0.005, grantQuotaSpent: null });
    expect(result.detail).toMatch(/^0\.0 s of \{"serverErrorRate":0\.\d+\}$/);
  });
});

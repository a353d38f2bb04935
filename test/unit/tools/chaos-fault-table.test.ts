import { describe, expect, it } from 'vitest';
import type { ApiFaultContext } from '../../../tools/chaos/faults/api-faults.js';
import { FAULT_UNITS, type FaultContext } from '../../../tools/chaos/faults/table.js';
import { seededRandom } from '../../../tools/chaos/random.js';
import {
  API_FAULTS,
  PROCESS_FAULTS,
  SIGNAL_FAULTS,
  WEBHOOK_FAULTS,
  type FaultKind,
} from '../../../tools/chaos/schedule.js';

const ALL_KINDS: readonly FaultKind[] = [
  ...PROCESS_FAULTS,
  ...API_FAULTS,
  ...SIGNAL_FAULTS,
  ...WEBHOOK_FAULTS,
];

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

describe('the chaos stack faults', () => {
  /** A one-slot fleet that records kills and starts (what the supervisor did). */
  function recordingFleet(): { events: string[]; fleet: object } {
    const events: string[] = [];
    const process = { name: 'connector-1' };
    return {
      events,
      fleet: {
        size: 1,
        running: () => process,
        label: () => 'i1 (connector-1)',
        fact: () => ({ kills: 0 }),
        kill9: async () => void events.push('kill -9 connector-1'),
        slotIndex: () => 0,
        start: () => {
          events.push('start slot 0');
          return process;
        },
      },
    };
  }

  it('takes the broker down and up again, restarting the connector meanwhile as its seed draws it', async () => {
    const details = new Set<string>();
    for (let seed = 1; seed <= 8; seed++) {
      const { events, fleet } = recordingFleet();
      const stack = {
        killKafka: async () => void events.push('kill-kafka'),
        startKafka: async () => void events.push('start-kafka'),
      };
      const context = { fleet, distributed: false, stack } as unknown as FaultContext;
      const result = await FAULT_UNITS['broker-kill'](
        { kind: 'broker-kill', atMs: 0, durationMs: 0, seed },
        seededRandom(seed),
        context,
      );
      const restarted = result.detail.endsWith(', i1 (connector-1) killed and restarted meanwhile');
      expect(events).toEqual(
        restarted
          ? ['kill-kafka', 'kill -9 connector-1', 'start slot 0', 'start-kafka']
          : ['kill-kafka', 'start-kafka'],
      );
      details.add(result.detail);
    }
    expect([...details].sort()).toEqual([
      'broker kill -9, restarted after 0.0 s down',
      'broker kill -9, restarted after 0.0 s down, i1 (connector-1) killed and restarted meanwhile',
    ]);
  });
});

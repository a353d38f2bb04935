import { describe, expect, it } from 'vitest';
import { FatalError, RetriableError } from '../../../src/errors/index.js';
import type { Initialisation } from '../../../src/kafka/group/start-stamp.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { testMetrics } from '../../support/metrics.js';
import { Failures } from '../../../src/runtime/steps/context.js';
import type { Writer } from '../../../src/runtime/instance-writer.js';
import { WriterRole, type InstancesGroupWatch } from '../../../src/runtime/writer-role.js';
import { ManualClock } from '../../support/clock.js';

const RECHECK_MS = 30_000;

function fenced(): FatalError {
  return new FatalError('KAFKA_FENCED_BY_ANOTHER_INSTANCE', 'an instance started after this one is a member');
}

/** The instances group as scripted by the test: `answer` is what newest() says; `rebalance()` completes a join. */
class ScriptedGroup implements InstancesGroupWatch {
  joins = 0;
  answer: boolean | Error = false;
  readonly asked: Initialisation[] = [];
  private waiters: (() => void)[] = [];

  rejoined(seen: number, signal: AbortSignal): Promise<void> {
    if (this.joins > seen) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = () => {
        if (this.joins > seen) resolve();
      };
      this.waiters.push(waiter);
      signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
    });
  }

  newest(initialisation: Initialisation): Promise<boolean> {
    this.asked.push(initialisation);
    return this.answer instanceof Error ? Promise.reject(this.answer) : Promise.resolve(this.answer);
  }

  rebalance(): void {
    this.joins += 1;
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}

/** A writer that runs until its signal aborts, and records its close. */
function writer(name: string, events: string[]): Writer {
  return {
    run: (signal) =>
      new Promise<void>((resolve) => {
        events.push(`${name} runs`);
        if (signal.aborted) resolve();
        else signal.addEventListener('abort', () => resolve(), { once: true });
      }),
    status: () => [],
    waitReasons: () => [],
    nudge: (locationUid) => {
      events.push(`${name} nudged ${locationUid}`);
      return 'due_now';
    },
    close: () => {
      events.push(`${name} closed`);
      return Promise.resolve();
    },
  };
}

/** Lets every promise settled so far run its continuations. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

function setup(open?: () => Promise<Writer>) {
  const events: string[] = [];
  const metrics = testMetrics();
  const failures = new Failures('orders', metrics, silentLogger());
  const group = new ScriptedGroup();
  const clock = new ManualClock(1_000);
  let opened = 0;
  const role = new WriterRole({
    first: writer('A', events),
    open:
      open ??
      (() => {
        opened += 1;
        events.push('A initialises again');
        return Promise.resolve(writer(`A${opened + 1}`, events));
      }),
    group,
    joinsAtStart: 0,
    failures,
    metrics,
    logger: silentLogger(),
    clock,
    recheckMs: RECHECK_MS,
  });
  const gauge = async (name: 'instanceWriter' | 'standby') =>
    (await metrics[name].get()).values[0]?.value ?? 0;
  return { events, metrics, failures, group, clock, role, gauge };
}

describe('WriterRole (single mode: a standby takes over)', () => {
  it('stands by while a newer instance is a member, and initialises again once it has left (review L4 a)', async () => {
    const { events, failures, group, role, gauge } = setup();
    const stop = new AbortController();
    const running = role.run(stop.signal);
    await settle();
    expect(role.status().role).toBe('writer');
    expect(await gauge('instanceWriter')).toBe(1);

    // B starts and fences A: A's next build sees B newer and stands down.
    group.rebalance();
    failures.fail(fenced());
    await settle();
    expect(role.status().role).toBe('standby');
    expect(failures.error?.code).toBe('KAFKA_FENCED_BY_ANOTHER_INSTANCE');
    expect(await gauge('instanceWriter')).toBe(0);
    expect(await gauge('standby')).toBe(1);
    expect(events).toEqual(['A runs', 'A closed']);
    expect(group.asked).toEqual(['again']); // asked once after B's join: B newer

    // B is stopped: the group rebalances with A alone.
    group.answer = true;
    group.rebalance();
    await settle();
    expect(events).toEqual(['A runs', 'A closed', 'A initialises again', 'A2 runs']);
    expect(group.asked).toEqual(['again', 'again']);
    expect(role.status().role).toBe('writer');
    expect(failures.error).toBeNull(); // /readyz's writer check passes again
    expect(await gauge('instanceWriter')).toBe(1);
    expect(await gauge('standby')).toBe(0);

    stop.abort();
    await running;
    await role.close();
    expect(events.at(-1)).toBe('A2 closed');
  });

  it("hands a webhook's nudge to the current writer's scheduler, and none to a standby (it schedules nothing)", async () => {
    const { events, failures, group, role } = setup();
    const stop = new AbortController();
    const running = role.run(stop.signal);
    await settle();
    expect(role.nudge('loc-1')).toBe('due_now');

    group.rebalance();
    failures.fail(fenced());
    await settle();
    expect(role.nudge('loc-1')).toBe('unknown');

    group.answer = true;
    group.rebalance();
    await settle();
    expect(role.nudge('loc-1')).toBe('due_now');
    expect(events.filter((e) => e.includes('nudged'))).toEqual(['A nudged loc-1', 'A2 nudged loc-1']);

    stop.abort();
    await running;
    await role.close();
  });

  it('asks as a re-initialisation, so a member of an earlier version keeps it standing by until it leaves (review L4 b)', async () => {
    const { events, failures, group, role } = setup();
    const running = role.run(new AbortController().signal);
    // The earlier version's member counts as newer at a re-initialisation: the group answers false.
    failures.fail(fenced());
    group.rebalance();
    await settle();
    expect(events).not.toContain('A initialises again');

    group.answer = true; // it exited
    group.rebalance();
    await settle();
    expect(events).toContain('A initialises again');
    expect(new Set(group.asked)).toEqual(new Set(['again']));
    void running;
  });

  it('does not take over without a rebalance until the safety re-check, on the clock', async () => {
    const { events, failures, group, clock, role } = setup();
    void role.run(new AbortController().signal);
    failures.fail(fenced());
    await settle();
    group.answer = true; // the rebalance that said so went unseen
    await settle();
    expect(events).not.toContain('A initialises again');

    await clock.sleepingFor(RECHECK_MS);
    clock.advance(RECHECK_MS);
    await settle();
    expect(events).toContain('A initialises again');
  });

  it('stands by again when the takeover fails holding nothing, and takes over at the next rebalance', async () => {
    let attempts = 0;
    const events: string[] = [];
    const { failures, group, role } = setup(() => {
      attempts += 1;
      if (attempts === 1)
        return Promise.reject(new RetriableError('KAFKA_UNAVAILABLE', 'the cluster is restarting'));
      return Promise.resolve(writer('A2', events));
    });
    void role.run(new AbortController().signal);
    failures.fail(fenced());
    group.answer = true;
    group.rebalance();
    await settle();
    expect(attempts).toBe(1);
    expect(role.status().role).toBe('standby');
    expect(failures.error?.code).toBe('KAFKA_FENCED_BY_ANOTHER_INSTANCE');

    group.rebalance();
    await settle();
    expect(attempts).toBe(2);
    expect(events).toEqual(['A2 runs']);
    expect(role.status().role).toBe('writer');
  });

  it('keeps standing by while the group cannot be read, and asks again at the next rebalance', async () => {
    const { events, failures, group, role } = setup();
    void role.run(new AbortController().signal);
    failures.fail(fenced());
    group.answer = new Error('the group did not settle');
    group.rebalance();
    await settle();
    expect(events).not.toContain('A initialises again');

    group.answer = true;
    group.rebalance();
    await settle();
    expect(events).toContain('A initialises again');
  });

  it('ends with a fatal error reported while standing by (the membership lost): it can no longer watch', async () => {
    const { failures, role } = setup();
    const running = role.run(new AbortController().signal);
    failures.fail(fenced());
    await settle();

    failures.membershipLost(new Error('the group consumer crashed'));

    await expect(running).rejects.toMatchObject({ code: 'KAFKA_GROUP_MEMBERSHIP_LOST' });
  });

  it('resolves when stopped while standing by, without taking over', async () => {
    const { events, failures, group, role } = setup();
    const stop = new AbortController();
    const running = role.run(stop.signal);
    failures.fail(fenced());
    await settle();

    stop.abort();
    await running;
    group.answer = true;
    group.rebalance();
    await settle();
    expect(events).not.toContain('A initialises again');
  });

  it('closes at once a writer whose takeover completes after the shutdown closed the role', async () => {
    const events: string[] = [];
    let opened: (writer: Writer) => void = () => undefined;
    const { failures, group, role } = setup(() => new Promise<Writer>((resolve) => (opened = resolve)));
    const running = role.run(new AbortController().signal);
    failures.fail(fenced());
    group.answer = true;
    group.rebalance();
    await settle();

    await role.close();
    opened(writer('A2', events));

    await running;
    expect(events).toEqual(['A2 closed']);
  });
});

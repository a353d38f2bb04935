import { describe, expect, it } from 'vitest';
import { FatalError } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { testMetrics } from '../../support/metrics.js';
import { DistributedWriter } from '../../../src/runtime/distributed-writer.js';
import type { Writer } from '../../../src/runtime/instance-writer.js';
import { Failures } from '../../../src/runtime/steps/context.js';
import { ManualClock } from '../../support/clock.js';

/** A writer that runs until its signal aborts, and records what happens to it. */
function writer(events: string[]): Writer {
  return {
    run: (signal) =>
      new Promise<void>((resolve) => {
        events.push('runs');
        if (signal.aborted) resolve();
        else signal.addEventListener('abort', () => resolve(), { once: true });
      }),
    status: () => [],
    waitReasons: () => [],
    nudge: (locationUid) => {
      events.push(`nudged ${locationUid}`);
      return 'due_now';
    },
    close: () => {
      events.push('closed');
      return Promise.resolve();
    },
  };
}

function setup() {
  const events: string[] = [];
  const metrics = testMetrics();
  const failures = new Failures('orders', metrics, silentLogger());
  const clock = new ManualClock(1_000);
  const distributed = new DistributedWriter({
    writer: writer(events),
    failures,
    metrics,
    logger: silentLogger(),
    clock,
  });
  const gauge = async () => (await metrics.instanceWriter.get()).values[0]?.value ?? 0;
  return { events, failures, clock, distributed, gauge };
}

/** Lets every promise settled so far run its continuations. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

describe('DistributedWriter (one writer for good, no takeover)', () => {
  it('writes and takes nudges until stopped, then resolves', async () => {
    const { events, distributed, gauge } = setup();
    const stop = new AbortController();
    const running = distributed.run(stop.signal);
    expect(distributed.nudge('l1')).toBe('due_now');
    expect(distributed.status()).toEqual({ role: 'writer', since: 1_000 });
    expect(await gauge()).toBe(1);

    stop.abort();
    await running;
    expect(events).toEqual(['runs', 'nudged l1']);
  });

  it('stood down by a newer instance, closes its writer and stands by until stopped, taking no nudges', async () => {
    const { events, failures, clock, distributed, gauge } = setup();
    const stop = new AbortController();
    const running = distributed.run(stop.signal);
    clock.advance(500);
    failures.fail(new FatalError('KAFKA_FENCED_BY_ANOTHER_INSTANCE', 'a newer instance is a member'));
    await settle();
    expect(distributed.status()).toEqual({ role: 'standby', since: 1_500 });
    expect(distributed.nudge('l1')).toBe('unknown');
    expect(await gauge()).toBe(0);
    let ended = false;
    void running.then(() => (ended = true));
    await settle();
    expect(ended).toBe(false);

    stop.abort();
    await running;
    expect(events).toEqual(['runs', 'closed']);
  });

  it('ends its run with any other fatal error', async () => {
    const { failures, distributed } = setup();
    const running = distributed.run(new AbortController().signal);
    failures.fail(new FatalError('KAFKA_GROUP_MEMBERSHIP_LOST', 'the group ended the membership'));
    await expect(running).rejects.toMatchObject({ code: 'KAFKA_GROUP_MEMBERSHIP_LOST' });
  });
});

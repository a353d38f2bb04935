import { describe, expect, it } from 'vitest';
import { RestartLoop, type RestartEvents, type Restartable } from '../../../src/time/restart-loop.js';
import { ManualClock } from '../../support/clock.js';
import { deferred, idles, settles, type Deferred } from '../../support/async.js';

/** One attempt's thing: its start settles when the test says, and it counts its stops. */
class Thing implements Restartable {
  readonly starting: Deferred<void> = deferred();
  stops = 0;

  constructor(readonly events: RestartEvents) {}

  start(): Promise<void> {
    return this.starting.promise;
  }

  stop(): Promise<void> {
    this.stops += 1;
    return Promise.resolve();
  }
}

function loop() {
  const clock = new ManualClock(1_000_000);
  const things: Thing[] = [];
  const failures: Array<{ reason: string; failures: number; retryInMs: number }> = [];
  let recovered = 0;
  const subject = new RestartLoop({
    create: (events) => {
      const thing = new Thing(events);
      things.push(thing);
      return thing;
    },
    describe: (error) => (error instanceof Error ? error.message : String(error)),
    onFailure: ({ reason, failures: count, retryInMs }) =>
      failures.push({ reason, failures: count, retryInMs }),
    onRecovered: () => (recovered += 1),
    backoff: { initialDelayMs: 1_000, maxDelayMs: 60_000, multiplier: 2, jitter: 0 },
    clock,
  });
  const current = (): Thing => {
    const last = things.at(-1);
    if (last === undefined) throw new Error('no attempt yet');
    return last;
  };
  return { subject, clock, things, failures, current, recovered: () => recovered };
}

/** Whether `promise` has settled after the pending promise turns. */
async function isSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

describe('the restart loop', () => {
  it('records a failed start, stops it, and starts a new one after the backoff’s wait', async () => {
    const l = loop();
    const started = l.subject.start();
    l.current().starting.reject(new Error('TOPIC_AUTHORIZATION_FAILED'));
    await started;

    expect(l.failures).toEqual([{ reason: 'TOPIC_AUTHORIZATION_FAILED', failures: 1, retryInMs: 1_000 }]);
    expect(l.subject.failure()).toEqual({
      reason: 'TOPIC_AUTHORIZATION_FAILED',
      retryInMs: 1_000,
      failures: 1,
    });
    expect(l.things[0]?.stops).toBe(1);

    l.clock.advance(400);
    expect(l.subject.failure()?.retryInMs).toBe(600);
    l.clock.advance(599);
    await idles();
    expect(l.things).toHaveLength(1);
    l.clock.advance(1);
    await settles(() => l.things.length === 2, 'a second attempt');
    expect(l.subject.failure()).toEqual({
      reason: 'TOPIC_AUTHORIZATION_FAILED',
      retryInMs: null,
      failures: 1,
    });
  });

  it('waits longer after each failure, and clears the failure and starts the waits over once one runs', async () => {
    const l = loop();
    void l.subject.start();
    l.current().starting.reject(new Error('first'));
    await settles(() => l.clock.pending === 1, 'the first wait');
    l.clock.advance(1_000);
    await settles(() => l.things.length === 2, 'a second attempt');
    l.current().starting.reject(new Error('second'));
    await settles(() => l.failures.length === 2, 'the second failure');
    expect(l.failures[1]).toEqual({ reason: 'second', failures: 2, retryInMs: 2_000 });

    l.clock.advance(2_000);
    await settles(() => l.things.length === 3, 'a third attempt');
    l.current().starting.resolve();
    // Started is not running yet: a consumer runs once it joined.
    await idles();
    expect(l.subject.failure()?.reason).toBe('second');
    l.current().events.running();
    expect(l.subject.failure()).toBeNull();
    expect(l.recovered()).toBe(1);

    // A crash after it ran: a new one after the first wait again.
    l.current().events.failed(new Error('crashed'));
    expect(l.failures[2]).toEqual({ reason: 'crashed', failures: 1, retryInMs: 1_000 });
    expect(l.things[2]?.stops).toBe(1);
    l.clock.advance(1_000);
    await settles(() => l.things.length === 4, 'a fourth attempt');
  });

  it('resolves ready once an attempt first runs, not when it started', async () => {
    const l = loop();
    const ready = l.subject.ready();
    const started = l.subject.start();
    l.current().starting.resolve();
    await started;
    expect(await isSettled(ready)).toBe(false);
    l.current().events.running();
    expect(await isSettled(ready)).toBe(true);
    expect(l.recovered()).toBe(0);
  });

  it('ignores what an attempt that failed reports afterwards', async () => {
    const l = loop();
    void l.subject.start();
    const first = l.current();
    first.events.failed(new Error('crashed'));
    first.events.running();
    first.events.failed(new Error('crashed again'));
    first.starting.reject(new Error('start failed too'));
    await idles();
    expect(l.failures).toHaveLength(1);
    expect(l.subject.failure()?.reason).toBe('crashed');
    expect(first.stops).toBe(1);
  });

  it('stops the attempt under way on close, waits for its start, and starts no other', async () => {
    const l = loop();
    void l.subject.start();
    const closed = l.subject.close();
    expect(l.current().stops).toBe(1);
    expect(await isSettled(closed)).toBe(false);
    l.current().starting.reject(new Error('disconnected while connecting'));
    await closed;

    expect(l.failures).toEqual([]);
    expect(l.clock.pending).toBe(0);
    l.clock.advance(60_000);
    await idles();
    expect(l.things).toHaveLength(1);
    expect(l.things[0]?.stops).toBe(1);
  });

  it('cancels the wait on close and starts no other attempt', async () => {
    const l = loop();
    void l.subject.start();
    l.current().starting.reject(new Error('refused'));
    await settles(() => l.clock.pending === 1, 'the wait');
    await l.subject.close();

    expect(l.clock.pending).toBe(0);
    l.clock.advance(60_000);
    await idles();
    expect(l.things).toHaveLength(1);
    expect(l.things[0]?.stops).toBe(1);
  });

  it('stops a running attempt on close', async () => {
    const l = loop();
    void l.subject.start();
    l.current().starting.resolve();
    l.current().events.running();
    await l.subject.close();
    expect(l.current().stops).toBe(1);
    l.current().events.failed(new Error('disconnected'));
    expect(l.failures).toEqual([]);
    expect(l.clock.pending).toBe(0);
  });
});

import { describe, expect, it } from 'vitest';
import { ConcurrencyCap } from '../../../src/api/concurrency-cap.js';
import type { RequestPriority } from '../../../src/api/rate-limit/scope-limiter.js';

/** A request whose end the test decides; `started` once the cap let it run. */
function request() {
  let end!: (value: string) => void;
  let fail!: (error: Error) => void;
  let started = false;
  const done = new Promise<string>((resolve, reject) => {
    end = resolve;
    fail = reject;
  });
  return {
    task: () => {
      started = true;
      return done;
    },
    get started() {
      return started;
    },
    end,
    fail,
  };
}

/** Lets queued promise callbacks run (no timers). */
const settle = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

describe('ConcurrencyCap', () => {
  it('starts a request at once when nothing is in flight', () => {
    const cap = new ConcurrencyCap(4);
    const r = request();
    void cap.run(r.task, 'live');
    expect(r.started).toBe(true);
    expect(cap.inFlight).toBe(1);
  });

  it('never has more than max requests in flight, however they arrive and end', async () => {
    const cap = new ConcurrencyCap(3);
    const requests = Array.from({ length: 12 }, () => request());
    const results = requests.map((r, i) => cap.run(r.task, i % 3 === 0 ? 'backfill' : 'live'));
    await settle();
    const ended = new Set<number>();
    for (let k = 0; k < requests.length; k++) {
      const running = requests.filter((r, i) => r.started && !ended.has(i)).length;
      expect(running).toBe(Math.min(3, requests.length - k));
      expect(cap.inFlight).toBe(running);
      // The oldest running request ends: exactly one more may start.
      const oldest = requests.findIndex((r, i) => r.started && !ended.has(i));
      ended.add(oldest);
      requests[oldest]?.end('ok');
      await settle();
    }
    await Promise.all(results);
    expect(cap.inFlight).toBe(0);
  });

  it('keeps the cap when requests come while earlier ones that found it empty still run', async () => {
    const cap = new ConcurrencyCap(2);
    const first = request();
    void cap.run(first.task, 'live');
    const second = request();
    void cap.run(second.task, 'live');
    const third = request();
    void cap.run(third.task, 'live');
    await settle();
    expect([first.started, second.started, third.started]).toEqual([true, true, false]);
    first.end('ok');
    await settle();
    expect(third.started).toBe(true);
    expect(cap.inFlight).toBe(2);
  });

  it('holds a request back while the queue runs at the cap, though none waits in it', async () => {
    const cap = new ConcurrencyCap(3);
    const [a, b, c, d, e, f] = [request(), request(), request(), request(), request(), request()];
    for (const r of [a, b, c, d, e]) void cap.run(r.task, 'live');
    a.end('ok');
    b.end('ok');
    await settle();
    // c, d and e now all run in the queue, none waits there.
    expect([c, d, e].every((r) => r.started)).toBe(true);
    expect(cap.waiting).toBe(0);
    void cap.run(f.task, 'live');
    await settle();
    expect(f.started).toBe(false);
    expect(cap.inFlight).toBe(3);
    c.end('ok');
    await settle();
    expect(f.started).toBe(true);
  });

  it('runs a waiting live request before a backfill one that waited longer', async () => {
    const cap = new ConcurrencyCap(1);
    const order: RequestPriority[] = [];
    const busy = request();
    void cap.run(busy.task, 'live');
    const backfill = request();
    const live = request();
    const runs = [
      cap.run(() => (order.push('backfill'), backfill.task()), 'backfill'),
      cap.run(() => (order.push('live'), live.task()), 'live'),
    ];
    await settle();
    expect(order).toEqual([]);
    busy.end('ok');
    await settle();
    expect(order).toEqual(['live']);
    live.end('ok');
    await settle();
    expect(order).toEqual(['live', 'backfill']);
    backfill.end('ok');
    await Promise.all(runs);
  });

  it('never lets a request skip ahead of one that waits', async () => {
    const cap = new ConcurrencyCap(2);
    const a = request();
    const b = request();
    void cap.run(a.task, 'live');
    void cap.run(b.task, 'live');
    const waiting = request();
    void cap.run(waiting.task, 'backfill');
    a.end('ok');
    // Before the waiting request had its turn, a new one arrives: it waits behind it.
    const late = request();
    void cap.run(late.task, 'backfill');
    await settle();
    expect(waiting.started).toBe(true);
    expect(late.started).toBe(false);
    expect(cap.inFlight).toBe(2);
  });

  it("rejects with an aborted signal's reason without starting the request", async () => {
    const cap = new ConcurrencyCap(4);
    const r = request();
    const reason = new Error('stopped');
    await expect(cap.run(r.task, 'live', AbortSignal.abort(reason))).rejects.toBe(reason);
    expect(r.started).toBe(false);
    expect(cap.inFlight).toBe(0);
  });

  it('drops a waiting request whose signal aborts, and the next one takes its place', async () => {
    const cap = new ConcurrencyCap(1);
    const busy = request();
    void cap.run(busy.task, 'live');
    const abort = new AbortController();
    const dropped = request();
    const droppedRun = cap.run(dropped.task, 'live', abort.signal);
    const next = request();
    void cap.run(next.task, 'live');
    const reason = new Error('stopped');
    abort.abort(reason);
    await expect(droppedRun).rejects.toBe(reason);
    busy.end('ok');
    await settle();
    expect(dropped.started).toBe(false);
    expect(next.started).toBe(true);
  });

  it('passes on the result or the failure of the request', async () => {
    const cap = new ConcurrencyCap(2);
    const ok = request();
    const failing = request();
    const okRun = cap.run(ok.task, 'live');
    const failingRun = cap.run(failing.task, 'live');
    ok.end('answer');
    const error = new Error('reset');
    failing.fail(error);
    await expect(okRun).resolves.toBe('answer');
    await expect(failingRun).rejects.toBe(error);
    expect(cap.inFlight).toBe(0);
  });

  it('rejects the waiting requests when cleared, and lets those running end', async () => {
    const cap = new ConcurrencyCap(1);
    const busy = request();
    const busyRun = cap.run(busy.task, 'live');
    const waiting = request();
    const waitingRun = cap.run(waiting.task, 'live');
    cap.clear();
    await expect(waitingRun).rejects.toMatchObject({ name: 'AbortError' });
    busy.end('ok');
    await expect(busyRun).resolves.toBe('ok');
    expect(waiting.started).toBe(false);
  });

  it('refuses a cap below one', () => {
    expect(() => new ConcurrencyCap(0)).toThrow(RangeError);
  });
});

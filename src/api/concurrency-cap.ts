/**
 * At most `max` API requests in flight across every limiter scope, live requests before backfill ones: p-queue
 * orders and holds the requests that must wait. A request that has nothing to wait for skips it: when the queue
 * holds no request, waiting or running, and fewer than `max - 1` requests are running past it. p-queue then runs
 * at most `max` less those: its concurrency is set to that before each request it takes, and raised again when a
 * request that skipped it ends while requests wait in it. Those only go up while the queue is empty, so the cap is
 * exact; and a request skips only an empty queue, so it never overtakes one that waits (live first holds).
 *
 * Why skip it at all: p-queue dispatches an event for each of a task's steps (add, active, next, completed, empty,
 * idle), binds the task to its async context and listens on its AbortSignal, which was a visible share of an idle
 * poll's CPU, where every request finds the queue empty.
 *
 * Contract: `run` starts `task` now or when the cap allows; rejects with `signal`'s reason if it aborts first (an
 * aborted signal: at once, the task never started). `clear` drops the waiting requests (the transport closes).
 */
import PQueue from 'p-queue';
import type { RequestPriority } from './rate-limit/scope-limiter.js';

export class ConcurrencyCap {
  private readonly queue: PQueue;
  /** Requests running that skipped the queue. */
  private skipping = 0;

  constructor(private readonly max: number) {
    if (!Number.isInteger(max) || max < 1)
      throw new RangeError('the concurrency cap must be an integer >= 1');
    this.queue = new PQueue({ concurrency: max });
  }

  /** Requests in flight now (those that skipped the queue and those it runs). */
  get inFlight(): number {
    return this.skipping + this.queue.pending;
  }

  /** Requests waiting for the cap. */
  get waiting(): number {
    return this.queue.size;
  }

  run<T>(task: () => Promise<T>, priority: RequestPriority, signal?: AbortSignal): Promise<T> {
    const { queue } = this;
    if (queue.size === 0 && queue.pending === 0 && this.skipping < this.max - 1) {
      if (signal?.aborted === true) return Promise.reject(signal.reason as Error);
      return this.skipQueue(task);
    }
    const allowed = this.max - this.skipping;
    if (queue.concurrency !== allowed) queue.concurrency = allowed;
    return queue.add(task, {
      priority: priority === 'live' ? 1 : 0,
      ...(signal === undefined ? {} : { signal }),
    });
  }

  /** Rejects the waiting requests (the transport closes); those running end as they do. */
  clear(): void {
    this.queue.clear();
  }

  /** Runs `task` past the queue (started at once: an async function runs up to its first await). */
  private async skipQueue<T>(task: () => Promise<T>): Promise<T> {
    this.skipping += 1;
    try {
      return await task();
    } finally {
      this.skipped();
    }
  }

  /** A request that skipped the queue ended: the queue may run one more of those waiting in it. */
  private skipped(): void {
    this.skipping -= 1;
    if (this.queue.size > 0) this.queue.concurrency = this.max - this.skipping;
  }
}

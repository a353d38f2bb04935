/**
 * The count of completed joins of one group member (one per rebalance it took part in), and the waits for the
 * next one (group/instance-presence.ts `joins` and `rejoined`). Plain data and callbacks: no Kafka, no timer.
 */
export class JoinCounter {
  private count = 0;
  private waiters: (() => void)[] = [];

  /** How many joins completed so far. */
  get joins(): number {
    return this.count;
  }

  /** A join completed: counts it and wakes the waits it satisfies. */
  joined(): void {
    this.count += 1;
    for (const waiter of [...this.waiters]) waiter();
  }

  /** Resolves once `joins` exceeds `seen` (at once if it already does); rejects when `signal` aborts. */
  rejoined(seen: number, signal: AbortSignal): Promise<void> {
    if (this.count > seen) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason as Error);
        return;
      }
      const waiter = () => {
        if (this.count <= seen) return;
        this.waiters = this.waiters.filter((w) => w !== waiter);
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(signal.reason as Error);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }
}

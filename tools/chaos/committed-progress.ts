/**
 * Committed progress as the driver watches it: the offsets topic's last stable offsets, polled every 250 ms
 * while the run lasts. A fault's recovery is the time from its end to the next page committed after it.
 */
import { sleep, until } from './processes.js';
import type { TopicObserver } from './topic-observer.js';

export class CommittedProgress {
  /** When the last stable offsets last grew (epoch ms); 0 until the first page after the loop began. */
  lastAt = 0;
  private total = -1n;

  constructor(private readonly topics: Pick<TopicObserver, 'committedTotal'>) {}

  /** Polls until `stopped()`; resolves then. */
  async loop(stopped: () => boolean): Promise<void> {
    while (!stopped()) {
      try {
        const total = await this.topics.committedTotal();
        if (this.total >= 0n && total > this.total) this.lastAt = Date.now();
        this.total = total;
      } catch {
        /* broker down or topic not yet created */
      }
      await sleep(250);
    }
  }

  /** The time from `after` to the first page committed after it; null when none within `capMs`. */
  async waitFor(after: number, capMs: number): Promise<number | null> {
    const ok = await until(() => this.lastAt > after, capMs, 100);
    return ok ? this.lastAt - after : null;
  }
}

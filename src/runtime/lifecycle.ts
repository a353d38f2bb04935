/**
 * One stack of cleanups for everything a running connector opens, as fastify's avvio runs its `onClose` hooks:
 * each start-up step registers how to undo what it opened right after opening it, and `close()` undoes it all in
 * reverse order. The same stack serves a start that fails half-way (only what was opened is undone) and a normal
 * shutdown, so the two can never list different resources or close them in different orders.
 *
 * The ordering constraints follow from the order of the steps (runtime/connector.ts states them once): what is
 * opened later depends on what was opened earlier, so it is closed first.
 *
 * Contract: `defer` while starting; `close()` once at the end (later calls wait for the first); a cleanup that
 * fails is logged with its name and does not stop the ones after it. A cleanup slower than `slowCloseMs` is
 * logged with its name and time: a stop that takes most of a minute (one CI run saw a demo's Ctrl-C take 55 s)
 * then says which resource held it.
 */
import { systemClock, type Clock } from '../time/clock.js';

/** A cleanup at least this slow (ms) is named in a warning. */
export const SLOW_CLOSE_MS = 5_000;

interface Cleanup {
  name: string;
  close: () => Promise<void> | void;
}

export class Lifecycle {
  private readonly stack: Cleanup[] = [];
  private closing: Promise<void> | null = null;

  constructor(
    private readonly logger: { warn(details: object, message: string): void },
    private readonly clock: Pick<Clock, 'now'> = systemClock,
  ) {}

  /** Registers the undoing of something just opened; it runs before everything registered earlier. */
  defer(name: string, close: () => Promise<void> | void): void {
    if (this.closing !== null) throw new Error(`cannot register ${name}: the lifecycle is closing`);
    this.stack.push({ name, close });
  }

  /** Runs every cleanup, the last registered first. */
  close(): Promise<void> {
    this.closing ??= this.unwind();
    return this.closing;
  }

  private async unwind(): Promise<void> {
    for (let cleanup = this.stack.pop(); cleanup !== undefined; cleanup = this.stack.pop()) {
      const startedAt = this.clock.now();
      try {
        await cleanup.close();
      } catch (error) {
        this.logger.warn({ err: error, component: cleanup.name }, 'error while closing');
      }
      const tookMs = this.clock.now() - startedAt;
      if (tookMs >= SLOW_CLOSE_MS)
        this.logger.warn({ component: cleanup.name, tookMs }, 'slow to close: it held the stop this long');
    }
  }
}

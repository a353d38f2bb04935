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
 * fails is logged with its name and does not stop the ones after it.
 */
interface Cleanup {
  name: string;
  close: () => Promise<void> | void;
}

export class Lifecycle {
  private readonly stack: Cleanup[] = [];
  private closing: Promise<void> | null = null;

  constructor(private readonly logger: { warn(details: object, message: string): void }) {}

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
      try {
        await cleanup.close();
      } catch (error) {
        this.logger.warn({ err: error, component: cleanup.name }, 'error while closing');
      }
    }
  }
}

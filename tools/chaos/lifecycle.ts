/**
 * The run's lifecycle stack: whatever the run starts registers how to stop it, as it starts it; closing stops
 * them in reverse order (the last started first), each even when another failed. Closing is idempotent, since
 * the end of the run and Ctrl-C may both ask.
 */
export class Lifecycle {
  private readonly stops: (() => Promise<void>)[] = [];
  private closed: Promise<void> | null = null;

  /** True once closing began: nothing more should be started. */
  get closing(): boolean {
    return this.closed !== null;
  }

  /** Registers how to stop what was just started. */
  defer(stop: () => Promise<void>): void {
    this.stops.push(stop);
  }

  /** Stops everything registered, last first; rejects with the first failure once all were tried. */
  close(): Promise<void> {
    this.closed ??= this.stopAll();
    return this.closed;
  }

  private async stopAll(): Promise<void> {
    const failures: unknown[] = [];
    for (const stop of [...this.stops].reverse())
      await stop().catch((error: unknown) => failures.push(error));
    if (failures.length > 0) throw failures[0];
  }
}

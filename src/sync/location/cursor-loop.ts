/**
 * Detects a cursor loop within one traversal: the API handing back a cursor we already followed
 * (including an empty page returning the very cursor we sent). Following it would fetch the same pages
 * forever, so the orchestrator stops that location with a fatal CURSOR_LOOP.
 *
 * Memory stays bounded whatever the traversal length: an exact set of the most recent `window` cursors
 * catches short loops at their first repeat, and Brent's cycle detection (one remembered cursor, compared
 * with each new one, moved at powers of two) catches any longer loop within about twice its length.
 * Deterministic, no I/O; one instance per traversal (`reset()` when the traversal restarts).
 */
export class CursorLoopDetector {
  private recent = new Set<string>();
  private tortoise: string | null = null;
  private power = 1;
  private steps = 0;

  constructor(private readonly window = 10_000) {
    if (!Number.isInteger(window) || window < 1) throw new RangeError('window must be a positive integer');
  }

  /** Records a cursor sent in a request. */
  sent(cursor: string): void {
    this.recent.add(cursor);
    if (this.recent.size > this.window) {
      const oldest = this.recent.values().next().value;
      if (oldest !== undefined) this.recent.delete(oldest);
    }
    // Brent: move the tortoise to the newest cursor whenever the step count reaches the next power of two.
    if (this.tortoise === null || this.steps === this.power) {
      this.tortoise = cursor;
      this.power *= 2;
      this.steps = 0;
    }
    this.steps += 1;
  }

  /** Whether following `next` (a page's nextCursor) would revisit a cursor of this traversal. */
  isLoop(next: string | null): boolean {
    if (next === null) return false;
    return this.recent.has(next) || next === this.tortoise;
  }

  reset(): void {
    this.recent.clear();
    this.tortoise = null;
    this.power = 1;
    this.steps = 0;
  }
}

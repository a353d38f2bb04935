/**
 * The sandbox's clock: wall time at start, moved forward by a monotonic timer, plus whatever the admin
 * added with advance(). Token lifetimes, code and cursor expiry and every updatedAt written at run time
 * are read from it, so a test can jump ten hours ahead without waiting and updatedAt never goes backwards
 * when the machine's clock is adjusted.
 */
export interface SandboxClock {
  /** Milliseconds since the epoch, sandbox time. */
  nowMs(): number;
  /** Moves the clock forward (never backward: ms must be >= 0). */
  advance(ms: number): void;
}

export function createClock(startMs: number = Date.now()): SandboxClock {
  const startPerf = performance.now();
  let offset = 0;
  return {
    nowMs: () => Math.floor(startMs + (performance.now() - startPerf) + offset),
    advance: (ms) => {
      if (!Number.isFinite(ms) || ms < 0)
        throw new RangeError(`advanceClock needs a finite ms >= 0, got ${ms}`);
      offset += ms;
    },
  };
}

/**
 * Live mode: while the sandbox runs, existing calls change and new calls arrive at given rates, each
 * written with updatedAt = the sandbox clock's now. A changed record therefore moves to the end of an
 * ascending traversal (and to the front of a descending one), which is what the connector must cope with.
 *
 * Rates are per second of real time; fractional work carries over between ticks so low rates still
 * happen. Choices (which call, which location) come from a seeded generator.
 */
import type { SandboxContext } from './context.js';
import type { Random } from './random.js';

export interface LiveRates {
  updatesPerSecond: number;
  createsPerSecond: number;
}

const TICK_MS = 50;

/** Starts the ticker; returns its stop function. */
export function startLiveMode(ctx: SandboxContext, random: Random, rates: LiveRates): () => void {
  if (!(rates.updatesPerSecond >= 0 && rates.createsPerSecond >= 0))
    throw new RangeError('live rates must be >= 0');
  let last = performance.now();
  let updateDebt = 0;
  let createDebt = 0;
  const locations = ctx.store.locations;
  const tick = (): void => {
    const now = performance.now();
    const seconds = (now - last) / 1000;
    last = now;
    updateDebt += rates.updatesPerSecond * seconds;
    createDebt += rates.createsPerSecond * seconds;
    for (; updateDebt >= 1; updateDebt--) {
      const index = ctx.store.index(locations[random.int(0, locations.length - 1)] ?? '');
      if (index === undefined || index.size === 0) continue;
      const record = index.at(random.int(0, index.size - 1));
      if (record === undefined) continue;
      ctx.store.upsert({ uid: record.uid }, ctx.clock.nowMs());
      ctx.stats.live.updates++;
    }
    for (; createDebt >= 1; createDebt--) {
      const locationUid = locations[random.int(0, locations.length - 1)] ?? '';
      const nowMs = ctx.clock.nowMs();
      const digits = String(random.int(0, 9_999_999_999)).padStart(10, '0');
      ctx.store.upsert(
        {
          uid: random.uuid(),
          locationUid,
          updatedAt: nowMs,
          endedAt: nowMs,
          startedAt: nowMs - random.int(5_000, 1_800_000),
          customerPhoneNumber: `+1${digits}`,
          isPrivate: random.chance(0.2),
          conversationUid: random.uuid(),
        },
        nowMs,
      );
      ctx.stats.live.creates++;
    }
  };
  const timer = setInterval(tick, TICK_MS);
  timer.unref();
  return () => clearInterval(timer);
}

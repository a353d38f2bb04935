/**
 * The seeded random source of a chaos run: every choice (fault kinds, moments, durations, live changes) is
 * drawn from it, so a run is replayed from its printed seed. Wall-clock effects (how far the connector got
 * when a fault lands) still vary between runs; the schedule does not.
 */
export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [min, max]. */
  int(min: number, max: number): number;
  /** Uniform real in [min, max). */
  between(min: number, max: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** An independent generator derived from this one (a stream per concern, so one does not shift another). */
  fork(): Random;
}

/** mulberry32: small, fast, and good enough to spread faults; not for cryptography. */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const random: Random = {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    between: (min, max) => min + next() * (max - min),
    chance: (p) => next() < p,
    pick: <T>(items: readonly T[]): T => {
      if (items.length === 0) throw new RangeError('pick from an empty list');
      return items[Math.floor(next() * items.length)] as T;
    },
    fork: () => seededRandom(Math.floor(next() * 2 ** 32)),
  };
  return random;
}

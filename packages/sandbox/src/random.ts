/**
 * Seeded randomness for the sandbox. Everything the sandbox invents (data, live changes, faults) draws from
 * here so that one seed reproduces one run: tests and benchmarks see the same calls and the same faults.
 *
 * sfc32 (small fast counter, 128-bit state) seeded through splitmix32: fast, good enough statistically for
 * simulation, and a few lines long, so no library is worth it. Not for secrets: tokens use node:crypto.
 */

export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [min, max] (both inclusive). */
  int(min: number, max: number): number;
  /** true with probability p. */
  chance(p: number): boolean;
  /** A random RFC 4122 version-4 UUID (lower case), drawn from this generator. */
  uuid(): string;
}

function splitmix32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

const HEX_CHARS = Buffer.from('0123456789abcdef', 'latin1');
/** Byte position in the 36-char form of each of the 32 hex digits (dashes at 8, 13, 18 and 23). */
const UUID_POSITIONS = Array.from(
  { length: 32 },
  (_, i) => i + (i >= 8 ? 1 : 0) + (i >= 12 ? 1 : 0) + (i >= 16 ? 1 : 0) + (i >= 20 ? 1 : 0),
);
const UUID_SCRATCH = Buffer.from('00000000-0000-0000-0000-000000000000', 'latin1');

export function createRandom(seed: number): Random {
  const init = splitmix32(seed);
  let a = init();
  let b = init();
  let c = init();
  let d = init();
  const next32 = (): number => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) >>> 0;
    return t;
  };
  for (let i = 0; i < 12; i++) next32();
  const next = (): number => next32() / 4294967296;
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (p) => p > 0 && next() < p,
    uuid: () => {
      // Written as ASCII into a scratch buffer and decoded once: a flat 36-byte string, no cons or
      // sliced strings holding on to bigger ones (a million of these are held by the data set).
      for (let word = 0; word < 4; word++) {
        let w = next32();
        if (word === 1) w = ((w & 0xffff0fff) | 0x00004000) >>> 0;
        if (word === 2) w = ((w & 0x3fffffff) | 0x80000000) >>> 0;
        for (let nibble = 7; nibble >= 0; nibble--) {
          UUID_SCRATCH[UUID_POSITIONS[word * 8 + nibble] as number] = HEX_CHARS[w & 0xf] as number;
          w >>>= 4;
        }
      }
      return UUID_SCRATCH.toString('latin1', 0, 36);
    },
  };
}

/**
 * A uniform value in [0, 1) that depends only on (seed, n, salt): the n-th request's draw for one kind of
 * fault. Independent of how many other draws happened, so changing one fault rate does not reshuffle the
 * others, and a sequential client sees the same faults on every run.
 */
export function hashToUnit(seed: number, n: number, salt: number): number {
  let h = Math.imul((seed ^ 0x27d4eb2d) >>> 0, 0x9e3779b1) >>> 0;
  h = Math.imul(h ^ (n >>> 0), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ Math.floor(n / 4294967296), 0xc2b2ae35) >>> 0;
  h = Math.imul(h ^ (salt >>> 0) ^ (h >>> 15), 0x27d4eb2f) >>> 0;
  h = (h ^ (h >>> 13)) >>> 0;
  h = Math.imul(h, 0x165667b1) >>> 0;
  return ((h ^ (h >>> 16)) >>> 0) / 4294967296;
}

/** Inverse CDF of the standard normal (Acklam's rational approximation; |error| < 1.2e-9). */
export function normalQuantile(p: number): number {
  const a = [
    -39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716,
    2.506628277459239,
  ];
  const b = [
    -54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572,
  ];
  const c = [
    -0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734, 4.374664141464968,
    2.938163982698783,
  ];
  const d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416];
  const [a0, a1, a2, a3, a4, a5] = a as [number, number, number, number, number, number];
  const [b0, b1, b2, b3, b4] = b as [number, number, number, number, number];
  const [c0, c1, c2, c3, c4, c5] = c as [number, number, number, number, number, number];
  const [d0, d1, d2, d3] = d as [number, number, number, number];
  const low = 0.02425;
  const q0 = Math.min(Math.max(p, 1e-12), 1 - 1e-12);
  if (q0 < low) {
    const q = Math.sqrt(-2 * Math.log(q0));
    return (
      (((((c0 * q + c1) * q + c2) * q + c3) * q + c4) * q + c5) /
      ((((d0 * q + d1) * q + d2) * q + d3) * q + 1)
    );
  }
  if (q0 > 1 - low) {
    const q = Math.sqrt(-2 * Math.log(1 - q0));
    return (
      -(((((c0 * q + c1) * q + c2) * q + c3) * q + c4) * q + c5) /
      ((((d0 * q + d1) * q + d2) * q + d3) * q + 1)
    );
  }
  const q = q0 - 0.5;
  const r = q * q;
  return (
    ((((((a0 * r + a1) * r + a2) * r + a3) * r + a4) * r + a5) * q) /
    (((((b0 * r + b1) * r + b2) * r + b3) * r + b4) * r + 1)
  );
}

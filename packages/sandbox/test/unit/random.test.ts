import { describe, expect, it } from 'vitest';
import { createRandom, hashToUnit, normalQuantile } from '../../src/random.js';

describe('seeded random', () => {
  it('repeats its sequence for a seed', () => {
    const a = createRandom(9);
    const b = createRandom(9);
    expect(Array.from({ length: 5 }, () => a.uuid())).toEqual(Array.from({ length: 5 }, () => b.uuid()));
  });

  it('makes RFC 4122 version 4 uuids', () => {
    const r = createRandom(1);
    for (let i = 0; i < 200; i++)
      expect(r.uuid()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('draws integers within bounds, both inclusive', () => {
    const r = createRandom(2);
    const seen = new Set(Array.from({ length: 500 }, () => r.int(3, 5)));
    expect([...seen].sort()).toEqual([3, 4, 5]);
  });

  it('hashes (seed, n, salt) to a uniform value in [0, 1)', () => {
    const values = Array.from({ length: 10_000 }, (_, n) => hashToUnit(1, n, 2));
    expect(values.every((v) => v >= 0 && v < 1)).toBe(true);
    expect(values.reduce((s, v) => s + v, 0) / values.length).toBeCloseTo(0.5, 1);
    expect(hashToUnit(1, 5, 2)).toBe(hashToUnit(1, 5, 2));
    expect(hashToUnit(1, 5, 2)).not.toBe(hashToUnit(1, 5, 3));
  });

  it('inverts the standard normal distribution', () => {
    expect(normalQuantile(0.5)).toBeCloseTo(0, 8);
    expect(normalQuantile(0.975)).toBeCloseTo(1.959964, 5);
    expect(normalQuantile(0.01)).toBeCloseTo(-2.326348, 5);
  });
});

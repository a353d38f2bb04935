import { describe, expect, it } from 'vitest';
import { armsOf } from '../../../bench/webhooks.js';

const knobs = {
  sizes: [1_000, 10_000],
  dropSizes: [1_000],
  rps: 20,
  creates: 1,
  reconcileMs: 900_000,
  dropReconcileMs: 60_000,
  dropRate: 0.2,
  windowS: 40,
  largeWindowS: 30,
  tailMaxS: 60,
  firstPort: 25_100,
};

describe('the webhooks bench arms', () => {
  it('pits polling at the budget against webhooks at each size, with the drop case at its sizes only', () => {
    const arms = armsOf(knobs);
    expect(arms.map((a) => `${a.locations} ${a.kind}`)).toEqual([
      '1000 polling',
      '1000 webhooks',
      '1000 drop',
      '10000 polling',
      '10000 webhooks',
    ]);
    expect(arms.map((a) => a.intervalMs)).toEqual([53_000, 900_000, 60_000, 527_000, 900_000]);
  });

  it('gives each webhook arm a receiver port of its own', () => {
    const ports = armsOf(knobs)
      .filter((a) => a.kind !== 'polling')
      .map((a) => a.port);
    expect(ports).toEqual([25_100, 25_101, 25_102]);
  });

  it('waits past the reconciliation interval for the dropped ones, and at most the tail bound for polling', () => {
    const arms = armsOf(knobs);
    expect(arms.map((a) => a.tailS)).toEqual([60, 10, 75, 60, 10]);
    expect(arms.map((a) => a.windowS)).toEqual([40, 40, 40, 30, 30]);
  });
});

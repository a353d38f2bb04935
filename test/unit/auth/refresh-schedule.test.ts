import { describe, expect, it } from 'vitest';
import { RefreshMargin, RetryGate } from '../../../src/auth/refresh-schedule.js';
import type { GrantRecord } from '../../../src/auth/store/token-store.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const random = (value: number) => ({ random: () => value });

/** A record obtained at `obtainedAt` and expiring at `expiresAt`. */
function record(obtainedAt: number, expiresAt: number): GrantRecord {
  return {
    grant: 'default',
    clientId: 'c',
    accessToken: 'at',
    refreshToken: 'rt',
    accessTokenExpiresAt: expiresAt,
    obtainedAt,
    scopes: [],
  };
}

describe('RefreshMargin', () => {
  it('makes a token due refreshBeforeExpiryMs plus this instance’s share of the jitter before its expiry', () => {
    const token = record(0, 10 * HOUR);
    const noJitter = new RefreshMargin(10 * MINUTE, 5 * MINUTE, 10 * HOUR, random(0));
    expect(noJitter.due(token, 10 * HOUR - 10 * MINUTE - 1)).toBe(false);
    expect(noJitter.due(token, 10 * HOUR - 10 * MINUTE)).toBe(true);
    const halfJitter = new RefreshMargin(10 * MINUTE, 4 * MINUTE, 10 * HOUR, random(0.5));
    expect(halfJitter.due(token, 10 * HOUR - 12 * MINUTE - 1)).toBe(false);
    expect(halfJitter.due(token, 10 * HOUR - 12 * MINUTE)).toBe(true);
  });

  it('makes a token issued for less than the margin due halfway through its life', () => {
    const margin = new RefreshMargin(10 * MINUTE, 0, 10 * HOUR, random(0));
    const shortLived = record(HOUR, HOUR + 5 * MINUTE);
    expect(margin.due(shortLived, HOUR + 2 * MINUTE)).toBe(false);
    expect(margin.due(shortLived, HOUR + 2.5 * MINUTE)).toBe(true);
  });

  it('refuses a negative margin, or one that is not shorter than the token lifetime, its jitter included', () => {
    expect(() => new RefreshMargin(-1, 0, HOUR, random(0))).toThrow('must be >= 0');
    expect(() => new RefreshMargin(HOUR, 0, HOUR, random(0))).toThrow(
      'shorter than the access token lifetime',
    );
    expect(() => new RefreshMargin(50 * MINUTE, 10 * MINUTE, HOUR, random(0))).toThrow('refreshJitterMs');
    expect(() => new RefreshMargin(10 * MINUTE, -1, HOUR, random(0))).toThrow('refreshJitterMs');
  });
});

describe('RetryGate', () => {
  const policy = { initialDelayMs: 1_000, maxDelayMs: 8_000 };

  it('waits 50-100 % of a delay that doubles with each failure up to maxDelayMs', () => {
    const gate = new RetryGate(policy, random(1));
    expect(gate.fail(0)).toBe(1_000);
    expect(gate.waiting(999)).toBe(true);
    expect(gate.waiting(1_000)).toBe(false);
    expect([gate.fail(1_000), gate.fail(3_000), gate.fail(7_000), gate.fail(15_000)]).toEqual([
      2_000, 4_000, 8_000, 8_000,
    ]);
    expect(new RetryGate(policy, random(0)).fail(0)).toBe(500);
  });

  it('starts over after a reset, or once a streak of failures ended more than maxDelayMs ago', () => {
    const gate = new RetryGate(policy, random(1));
    gate.fail(0);
    gate.fail(1_000);
    gate.reset();
    expect(gate.waiting(0)).toBe(false);
    expect(gate.fail(5_000)).toBe(1_000);
    gate.fail(6_000); // retry at 8_000
    expect(gate.fail(8_000 + 8_001)).toBe(1_000);
  });
});

import { describe, expect, it } from 'vitest';
import {
  answerClockMs,
  firstItemParameters,
  readAnnounced,
  readRetryAfter,
  readWait,
  waitMs,
} from '../../../../src/api/rate-limit/headers.js';

const NOW = 1_700_000_000_000;
/** 2026-11-26T17:00:00Z: around issue 32's report. */
const NOW_2026 = Date.UTC(2026, 10, 26, 17, 0, 0);
const DAY_MS = 86_400_000;
const YEAR_MS = 365 * DAY_MS;
const reader =
  (headers: Record<string, string>) =>
  (name: string): string | null =>
    headers[name] ?? null;
const hold = (holdMs: number, form: string) => ({ kind: 'hold', holdMs, form });
const implausible = (raw: string) => ({ kind: 'implausible', raw });

describe('readWait', () => {
  it('reads a number up to a year of seconds as delay-seconds, fractions included', () => {
    expect(readWait('0', NOW_2026)).toEqual(hold(0, 'delta-seconds'));
    expect(readWait('30', NOW_2026)).toEqual(hold(30_000, 'delta-seconds'));
    expect(readWait('1.5', NOW_2026)).toEqual(hold(1_500, 'delta-seconds'));
    expect(readWait('0.0004', NOW_2026)).toEqual(hold(1, 'delta-seconds'));
    expect(readWait(String(YEAR_MS / 1000), NOW_2026)).toEqual(hold(YEAR_MS, 'delta-seconds'));
  });

  it('reads a larger number near the clock as a Unix time in seconds', () => {
    expect(readWait(String(NOW_2026 / 1000 + 90), NOW_2026)).toEqual(hold(90_000, 'epoch-seconds'));
    expect(readWait(String(NOW_2026 / 1000 + 0.25), NOW_2026)).toEqual(hold(250, 'epoch-seconds'));
  });

  it('reads a larger number still, near the clock, as a Unix time in milliseconds (issue 32)', () => {
    expect(readWait(String(NOW_2026 + 90_000), NOW_2026)).toEqual(hold(90_000, 'epoch-ms'));
    expect(readWait(String(NOW_2026 + 0.5), NOW_2026)).toEqual(hold(1, 'epoch-ms'));
  });

  it('reads an HTTP-date in each of its RFC 9110 forms', () => {
    for (const date of [
      'Thu, 26 Nov 2026 17:00:30 GMT',
      'Thursday, 26-Nov-26 17:00:30 GMT',
      'Thu Nov 26 17:00:30 2026',
    ])
      expect(readWait(date, NOW_2026), date).toEqual(hold(30_000, 'http-date'));
  });

  it('reads an ISO 8601 date-time with its offset, and guesses no time zone for one without', () => {
    expect(readWait('2026-11-26T17:00:30Z', NOW_2026)).toEqual(hold(30_000, 'iso-date'));
    expect(readWait('2026-11-26T18:00:30.000+01:00', NOW_2026)).toEqual(hold(30_000, 'iso-date'));
    expect(readWait('2026-11-26T17:00:30', NOW_2026)).toEqual(implausible('2026-11-26T17:00:30'));
  });

  it('reads a time up to a day past as no hold, and one further back as implausible', () => {
    expect(readWait(String(NOW_2026 / 1000 - 5), NOW_2026)).toEqual(hold(0, 'epoch-seconds'));
    expect(readWait(String(NOW_2026 - DAY_MS), NOW_2026)).toEqual(hold(0, 'epoch-ms'));
    expect(readWait('Wed, 25 Nov 2026 17:00:00 GMT', NOW_2026)).toEqual(hold(0, 'http-date'));
    const old = String(NOW_2026 - DAY_MS - 1);
    expect(readWait(old, NOW_2026)).toEqual(implausible(old));
    expect(readWait('Sun, 06 Nov 1994 08:49:37 GMT', NOW_2026)).toEqual(
      implausible('Sun, 06 Nov 1994 08:49:37 GMT'),
    );
  });

  it('reads a time more than a year ahead as implausible, in every form', () => {
    for (const value of [
      String((NOW_2026 + YEAR_MS) / 1000 + 1),
      String(NOW_2026 + YEAR_MS + 1),
      'Sat, 01 Jan 2028 00:00:00 GMT',
      '2030-01-01T00:00:00Z',
      // Epoch milliseconds read as epoch seconds, times 1000: what issue 32's held_until came from.
      '1795707166748000',
    ])
      expect(readWait(value, NOW_2026), value).toEqual(implausible(value));
  });

  it('reads the gap between a year of seconds and a Unix time in seconds as implausible', () => {
    expect(readWait('100000000', NOW_2026)).toEqual(implausible('100000000'));
  });

  it('reads negative, signed, exponent, non-numeric and empty values as implausible', () => {
    for (const value of ['-3', '+3', '1e3', 'soon', 'Infinity', 'NaN', '', '   ', '3 s', '0x10', '1.', '.5'])
      expect(readWait(value, NOW_2026), JSON.stringify(value)).toEqual(implausible(value));
  });

  it('ignores whitespace around the value', () => {
    expect(readWait(' \t7 ', NOW_2026)).toEqual(hold(7_000, 'delta-seconds'));
    expect(readWait('  Thu, 26 Nov 2026 17:00:30 GMT ', NOW_2026)).toEqual(hold(30_000, 'http-date'));
  });

  it('reads several values each and takes the longest, unless one of them makes no sense', () => {
    expect(readWait('30, 60', NOW_2026)).toEqual(hold(60_000, 'delta-seconds'));
    expect(readWait(`30,${NOW_2026 + 90_000}`, NOW_2026)).toEqual(hold(90_000, 'epoch-ms'));
    expect(readWait('30, -1', NOW_2026)).toEqual(implausible('30, -1'));
    expect(readWait('30, 100000000', NOW_2026)).toEqual(implausible('30, 100000000'));
    expect(readWait('30,', NOW_2026)).toEqual(implausible('30,'));
  });
});

describe('answerClockMs', () => {
  const ours = Date.parse('2026-11-29T03:29:39.000Z');

  it('is the API’s Date when its clock is hours apart from ours, so a reset written on it asks for what it means', () => {
    const apiNow = ours + 10 * 3600_000;
    const at = answerClockMs(new Date(apiNow).toUTCString(), ours);
    expect(at).toBe(apiNow);
    const reset = String(Math.floor((apiNow + 30_000) / 1000));
    expect(readWait(reset, at)).toEqual({ kind: 'hold', holdMs: 30_000, form: 'epoch-seconds' });
    // Read on our clock, the same reset asked for ten hours.
    expect(readWait(reset, ours)).toMatchObject({ holdMs: 10 * 3600_000 + 30_000 });
  });

  it('is our clock when the Date is within two seconds of it (the header counts whole seconds)', () => {
    expect(answerClockMs(new Date(ours - 1_500).toUTCString(), ours)).toBe(ours);
    expect(answerClockMs(new Date(ours + 2_000).toUTCString(), ours)).toBe(ours);
    expect(answerClockMs(new Date(ours + 3_000).toUTCString(), ours)).toBe(ours + 3_000);
  });

  it('is our clock when there is no Date, or one that does not read as a time within a year of ours', () => {
    expect(answerClockMs(null, ours)).toBe(ours);
    expect(answerClockMs(undefined, ours)).toBe(ours);
    expect(answerClockMs('yesterday', ours)).toBe(ours);
    expect(answerClockMs('Mon, 99 Foo 2026 99:99:99 GMT', ours)).toBe(ours);
    expect(answerClockMs(new Date(ours + 2 * 365 * 24 * 3600_000).toUTCString(), ours)).toBe(ours);
  });
});

describe('readRetryAfter', () => {
  it('is null when absent, and reads both RFC 9110 forms', () => {
    expect(readRetryAfter(null, NOW_2026)).toBeNull();
    expect(readRetryAfter(undefined, NOW_2026)).toBeNull();
    expect(readRetryAfter('120', NOW_2026)).toEqual(hold(120_000, 'delta-seconds'));
    expect(readRetryAfter('Thu, 26 Nov 2026 17:02:00 GMT', NOW_2026)).toEqual(hold(120_000, 'http-date'));
  });

  it('gives no wait for a value that makes no sense (the caller backs off)', () => {
    expect(waitMs(readRetryAfter('later', NOW_2026))).toBeNull();
    expect(waitMs(readRetryAfter(null, NOW_2026))).toBeNull();
    expect(waitMs(readRetryAfter('5', NOW_2026))).toBe(5_000);
  });
});

describe('readAnnounced', () => {
  it('announces nothing for an answer without rate-limit headers, looking at each name once', () => {
    const asked: string[] = [];
    const announced = readAnnounced((name) => {
      asked.push(name);
      return name === 'content-type' ? 'application/json' : null;
    }, NOW);
    expect(announced).toEqual({ ratePerSecond: null, remaining: null, reset: null });
    expect(new Set(asked).size).toBe(asked.length);
  });

  it('reads any one rate-limit header sent alone (none is missed by the look for any)', () => {
    expect(readAnnounced(reader({ 'ratelimit-remaining': '3' }), NOW).remaining).toBe(3);
    expect(readAnnounced(reader({ 'x-ratelimit-remaining': '2' }), NOW).remaining).toBe(2);
    expect(readAnnounced(reader({ ratelimit: '"default";r=1' }), NOW).remaining).toBe(1);
    expect(readAnnounced(reader({ 'ratelimit-reset': '7' }), NOW).reset).toEqual({
      header: 'ratelimit-reset',
      ...hold(7_000, 'delta-seconds'),
    });
    expect(readAnnounced(reader({ 'x-ratelimit-reset': '8' }), NOW).reset).toEqual({
      header: 'x-ratelimit-reset',
      ...hold(8_000, 'delta-seconds'),
    });
    // A policy alone gives no rate without its window, a limit alone none either: read, and nothing invented.
    expect(readAnnounced(reader({ 'ratelimit-policy': '"d";q=10;w=2' }), NOW).ratePerSecond).toBe(5);
    expect(readAnnounced(reader({ 'ratelimit-limit': '10' }), NOW).ratePerSecond).toBeNull();
    expect(readAnnounced(reader({ 'x-ratelimit-limit': '10' }), NOW).ratePerSecond).toBeNull();
  });

  it('reads the IETF RateLimit-Policy and RateLimit fields', () => {
    expect(
      readAnnounced(
        reader({ 'ratelimit-policy': '"default";q=100;w=60', ratelimit: '"default";r=0;t=30' }),
        NOW,
      ),
    ).toEqual({
      ratePerSecond: 100 / 60,
      remaining: 0,
      reset: { header: 'ratelimit', ...hold(30_000, 'delta-seconds') },
    });
  });

  it("reads the earlier drafts' RateLimit-Limit/Remaining/Reset with a bare-number policy", () => {
    expect(
      readAnnounced(
        reader({
          'ratelimit-policy': '10;w=1, 1000;w=3600',
          'ratelimit-limit': '10',
          'ratelimit-remaining': '4',
          'ratelimit-reset': '1',
        }),
        NOW,
      ),
    ).toEqual({
      ratePerSecond: 10,
      remaining: 4,
      reset: { header: 'ratelimit-reset', ...hold(1_000, 'delta-seconds') },
    });
  });

  it('reads X-RateLimit-* with a reset given as a Unix time, without inventing a rate', () => {
    const resetEpoch = NOW / 1000 + 120;
    expect(
      readAnnounced(
        reader({
          'x-ratelimit-limit': '5000',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': String(resetEpoch),
        }),
        NOW,
      ),
    ).toEqual({
      ratePerSecond: null,
      remaining: 0,
      reset: { header: 'x-ratelimit-reset', ...hold(120_000, 'epoch-seconds') },
    });
  });

  it('reads X-RateLimit-Reset in epoch milliseconds as such (issue 32: held until the year 58,873)', () => {
    // The reset of issue 32's report; the old rule read it as epoch seconds: +058873-09-10T18:19:08.000Z.
    const announced = readAnnounced(
      reader({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1795707166748' }),
      1_795_707_166_748 - 42_000,
    );
    expect(announced.reset).toEqual({ header: 'x-ratelimit-reset', ...hold(42_000, 'epoch-ms') });
  });

  it('reads the review L2 reset (1717000000000 ms) as epoch milliseconds then, and as implausible years later', () => {
    const headers = reader({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1717000000000' });
    const then = Date.UTC(2024, 4, 29, 16, 0, 0);
    expect(readAnnounced(headers, then).reset).toEqual({
      header: 'x-ratelimit-reset',
      ...hold(1_717_000_000_000 - then, 'epoch-ms'),
    });
    expect(readAnnounced(headers, NOW_2026).reset).toEqual({
      header: 'x-ratelimit-reset',
      ...implausible('1717000000000'),
    });
  });

  it('reads the first reset present, the IETF t first, whatever form it is in', () => {
    expect(
      readAnnounced(
        reader({
          ratelimit: '"default";r=0;t=' + String(NOW_2026 + 5_000),
          'x-ratelimit-reset': '60',
        }),
        NOW_2026,
      ).reset,
    ).toEqual({ header: 'ratelimit', ...hold(5_000, 'epoch-ms') });
    expect(
      readAnnounced(reader({ 'ratelimit-reset': 'never', 'x-ratelimit-reset': '60' }), NOW_2026).reset,
    ).toEqual({ header: 'ratelimit-reset', ...implausible('never') });
    expect(
      readAnnounced(reader({ ratelimit: '"default";r=3', 'x-ratelimit-reset': '60' }), NOW_2026).reset,
    ).toEqual({ header: 'x-ratelimit-reset', ...hold(60_000, 'delta-seconds') });
  });

  it('announces nothing without the headers, and ignores rates and counts that do not parse', () => {
    expect(readAnnounced(reader({}), NOW)).toEqual({ ratePerSecond: null, remaining: null, reset: null });
    expect(
      readAnnounced(reader({ 'ratelimit-policy': '"p";q=abc;w=-1', 'x-ratelimit-remaining': 'lots' }), NOW),
    ).toEqual({ ratePerSecond: null, remaining: null, reset: null });
  });

  it('takes the parameters of the first list item only', () => {
    expect([...firstItemParameters('"a";q=5;w=1, "b";q=9;w=2')]).toEqual([
      ['q', '5'],
      ['w', '1'],
    ]);
  });
});

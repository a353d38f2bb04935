import { describe, expect, it } from 'vitest';
import { compareDateTimes, parseInstant, toEpochMicros, toEpochMillis } from '../../../src/time/instant.js';

describe('parseInstant', () => {
  it('reads a UTC date-time with and without a fraction', () => {
    expect(parseInstant('2024-03-01T12:00:00Z')).toEqual({
      epochSeconds: Date.UTC(2024, 2, 1, 12) / 1000,
      fraction: '',
    });
    expect(parseInstant('2024-03-01T12:00:00.250Z')?.fraction).toBe('25');
  });

  it('reads years 0000-0099 as themselves, not as 1900-1999', () => {
    // Date.UTC maps two-digit years into the 1900s; the year 0050 must not equal 1950.
    expect(compareDateTimes('0050-01-01T00:00:00Z', '1950-01-01T00:00:00Z')).toBeLessThan(0);
    expect(parseInstant('0004-02-29T00:00:00Z')).not.toBeNull(); // a leap year (1904 would be too)
    expect(parseInstant('0100-02-29T00:00:00Z')).toBeNull(); // not a leap year
    expect(parseInstant('0001-01-01T00:00:00Z')?.epochSeconds).toBe(-62135596800);
  });

  it('applies the offset so that one instant has one value', () => {
    expect(parseInstant('2024-03-01T13:30:00+01:30')).toEqual(parseInstant('2024-03-01T12:00:00Z'));
    expect(parseInstant('2024-03-01T07:00:00-05:00')).toEqual(parseInstant('2024-03-01T12:00:00Z'));
  });

  it('rejects strings that are not RFC 3339 date-times with an offset', () => {
    for (const bad of [
      '2024-03-01',
      '2024-03-01T12:00:00',
      '2024-02-30T00:00:00Z',
      '2024-03-01T24:00:00Z',
      '2024-03-01T12:00:60Z',
      'yesterday',
      '2024-03-01 12:00:00Z',
    ]) {
      expect(parseInstant(bad), bad).toBeNull();
    }
  });
});

describe('compareDateTimes', () => {
  it('orders instants that differ below a millisecond', () => {
    expect(compareDateTimes('2024-03-01T12:00:00.123456Z', '2024-03-01T12:00:00.123457Z')).toBeLessThan(0);
    expect(compareDateTimes('2024-03-01T12:00:00.123000001Z', '2024-03-01T12:00:00.123Z')).toBeGreaterThan(0);
  });

  it('treats different precisions and offsets of one instant as equal', () => {
    expect(compareDateTimes('2024-03-01T12:00:00.5Z', '2024-03-01T13:00:00.500000+01:00')).toBe(0);
    expect(compareDateTimes('2024-03-01T12:00:00Z', '2024-03-01T12:00:00.000Z')).toBe(0);
  });

  it('orders across seconds regardless of the fraction digits', () => {
    expect(compareDateTimes('2024-03-01T12:00:00.999999Z', '2024-03-01T12:00:01Z')).toBeLessThan(0);
  });
});

describe('epoch conversions', () => {
  it('truncates to microseconds and milliseconds exactly', () => {
    const instant = parseInstant('2024-03-01T12:00:00.1234567Z');
    expect(instant).not.toBeNull();
    if (instant === null) return;
    expect(toEpochMicros(instant)).toBe(BigInt(Date.UTC(2024, 2, 1, 12)) * 1000n + 123456n);
    expect(toEpochMillis(instant)).toBe(Date.UTC(2024, 2, 1, 12) + 123);
  });
});

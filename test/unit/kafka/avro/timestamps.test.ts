import { describe, expect, it } from 'vitest';
import { epochMicrosToIso, isoToEpochMicros } from '../../../../src/kafka/avro/timestamps.js';

describe('isoToEpochMicros', () => {
  it('keeps microseconds that a JS Date would drop', () => {
    expect(isoToEpochMicros('2024-05-01T10:00:00.123456Z')).toBe(Date.UTC(2024, 4, 1, 10) * 1000 + 123_456);
  });

  it('applies the offset and pads short fractions', () => {
    expect(isoToEpochMicros('2024-05-01T12:00:00.5+02:00')).toBe(Date.UTC(2024, 4, 1, 10) * 1000 + 500_000);
    expect(isoToEpochMicros('2024-05-01T10:00:00Z')).toBe(Date.UTC(2024, 4, 1, 10) * 1000);
  });

  it('truncates digits beyond microseconds', () => {
    expect(isoToEpochMicros('2024-05-01T10:00:00.123456789Z')).toBe(
      Date.UTC(2024, 4, 1, 10) * 1000 + 123_456,
    );
  });

  it('handles instants before the epoch', () => {
    expect(isoToEpochMicros('1969-12-31T23:59:59.999999Z')).toBe(-1);
  });

  it('returns undefined for text that is not a date-time with an offset', () => {
    for (const text of ['yesterday', '2024-05-01', '2024-05-01T10:00:00', '2024-02-30T00:00:00Z', '']) {
      expect(isoToEpochMicros(text)).toBeUndefined();
    }
  });
});

describe('epochMicrosToIso', () => {
  it('formats UTC with six fractional digits and round-trips', () => {
    expect(epochMicrosToIso(Date.UTC(2024, 4, 1, 10) * 1000 + 7)).toBe('2024-05-01T10:00:00.000007Z');
    expect(epochMicrosToIso(-1)).toBe('1969-12-31T23:59:59.999999Z');
    const micros = isoToEpochMicros('2031-12-31T23:59:59.654321+01:00') ?? 0;
    expect(isoToEpochMicros(epochMicrosToIso(micros))).toBe(micros);
  });
});

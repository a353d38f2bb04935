import { describe, expect, it } from 'vitest';
import { statusClass } from '../../../src/metrics/metrics.js';

describe('statusClass', () => {
  it('maps HTTP statuses to status classes, with anything else as "error"', () => {
    expect(statusClass(200)).toBe('2xx');
    expect(statusClass(429)).toBe('4xx');
    expect(statusClass(503)).toBe('5xx');
    expect(statusClass(undefined)).toBe('error');
    expect(statusClass(0)).toBe('error');
  });
});

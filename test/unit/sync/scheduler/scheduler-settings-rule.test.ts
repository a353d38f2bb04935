import { describe, expect, it } from 'vitest';
import { checkSchedulerSettings } from '../../../../src/sync/scheduler/scheduler-settings-rule.js';

describe('checkSchedulerSettings', () => {
  it('accepts whole numbers of at least one and each location once', () => {
    expect(() =>
      checkSchedulerSettings({ maxLocationsInFlight: 1, pagesPerTurn: 3 }, ['a', 'b']),
    ).not.toThrow();
  });

  it('names what is wrong: workers, pages per turn, or a location scheduled twice', () => {
    expect(() => checkSchedulerSettings({ maxLocationsInFlight: 0, pagesPerTurn: 1 }, [])).toThrow(
      'maxLocationsInFlight must be >= 1',
    );
    expect(() => checkSchedulerSettings({ maxLocationsInFlight: 2, pagesPerTurn: 1.5 }, [])).toThrow(
      'pagesPerTurn must be >= 1',
    );
    expect(() => checkSchedulerSettings({ maxLocationsInFlight: 2, pagesPerTurn: 1 }, ['a', 'a'])).toThrow(
      'each location may be scheduled once',
    );
  });
});

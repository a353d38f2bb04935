/**
 * Clocks for tests: the system clock with its reading of the time replaced, so a test drives `now`
 * while sleeps and random numbers stay real.
 */
import { systemClock, type Clock } from '../../src/time/clock.js';

/** The system clock, reading the time from `now`. */
export function clockReading(now: () => number): Clock {
  return { ...systemClock, now };
}

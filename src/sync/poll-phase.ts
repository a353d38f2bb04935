/**
 * When a location that completed a traversal is due again: at its own phase of the poll interval, so that
 * the idle polls of many locations spread evenly over the interval instead of coming in rounds (every
 * location starts due at once, and "due one interval after it completed" would repeat that burst for ever).
 *
 * A location's phase is a fraction of the interval drawn from a hash of its uid: stable across restarts
 * and across instances (two instances sharing the locations agree on it), and independent of which other
 * locations exist, so adding or removing a location moves no other. Its polls are due at the instants
 * t = k × interval + phase × interval (ms since the epoch, k an integer). Pure: the scheduler computes a
 * location's phase once and calls phasedDelayMs each time a traversal completes.
 */
import { hash } from 'node:crypto';

/** The location's phase, a fraction in [0, 1) of the poll interval (the first 32 bits of SHA-256 of its uid). */
export function pollPhase(locationUid: string): number {
  return hash('sha256', locationUid, 'buffer').readUInt32BE(0) / 2 ** 32;
}

/**
 * How long after `nowMs` a location that has just completed a traversal is due: at the next instant of its
 * phase, strictly after `nowMs`. In steady state (an idle poll starts at its phase instant and takes less than
 * an interval) its polls start exactly one interval apart, at its phase. After a longer traversal (a backfill,
 * a poll started late) the next one comes at the next phase instant however soon: a change made after the
 * traversal's last listing then waits at most one interval for the poll that finds it. (A next poll at least
 * half an interval away, the rule before, skipped a phase instant that came sooner, and changes made then
 * waited up to one and a half intervals: the freshness bench's p99 tail.) Returns a delay in (0, interval].
 */
export function phasedDelayMs(nowMs: number, intervalMs: number, phase: number): number {
  if (!(intervalMs > 0) || !Number.isFinite(intervalMs)) throw new RangeError('intervalMs must be > 0');
  if (!(phase >= 0 && phase < 1)) throw new RangeError('phase must be in [0, 1)');
  const offset = phase * intervalMs;
  const due = (Math.floor((nowMs - offset) / intervalMs) + 1) * intervalMs + offset;
  return due - nowMs;
}

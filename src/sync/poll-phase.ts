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
 * How long after `nowMs` a location that has just completed a traversal is due: at the first instant of its
 * phase that is at least half an interval away. In steady state (an idle poll takes far less than half an
 * interval) its polls start exactly one interval apart, at its phase; after a long traversal the next one
 * starts between half an interval and one and a half intervals later. Returns a delay in [interval/2,
 * 3 × interval/2).
 */
export function phasedDelayMs(nowMs: number, intervalMs: number, phase: number): number {
  if (!(intervalMs > 0) || !Number.isFinite(intervalMs)) throw new RangeError('intervalMs must be > 0');
  if (!(phase >= 0 && phase < 1)) throw new RangeError('phase must be in [0, 1)');
  const earliest = nowMs + intervalMs / 2;
  const offset = phase * intervalMs;
  const due = Math.ceil((earliest - offset) / intervalMs) * intervalMs + offset;
  return due - nowMs;
}

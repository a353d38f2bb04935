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
 * phase, strictly after `nowMs`, and at least `minDelayMs` away (0 unless polls are only a safety net, below).
 * In steady state (an idle poll starts at its phase instant and takes less than an interval) its polls start
 * exactly one interval apart, at its phase. After a longer traversal (a backfill, a poll started late) the next
 * one comes at the next phase instant however soon: a change made after the traversal's last listing then
 * waits at most one interval for the poll that finds it. (A next poll at least half an interval away, the rule
 * before, skipped a phase instant that came sooner, and changes made then waited up to one and a half
 * intervals: the freshness bench's p99 tail.)
 *
 * With webhooks on, polls are reconciliation, not freshness: the scheduler passes half an interval as
 * `minDelayMs`, so the first round after a start (every location due at once, a round that lasts minutes at
 * 10,000 locations) does not poll again the locations whose phase instant comes before the round ends (29 % of
 * them at 10,000 locations: the webhooks bench's warm-up). Returns a delay in (0, interval] when `minDelayMs` is
 * 0, in [minDelayMs, minDelayMs + interval) otherwise.
 */
export function phasedDelayMs(nowMs: number, intervalMs: number, phase: number, minDelayMs = 0): number {
  if (!(intervalMs > 0) || !Number.isFinite(intervalMs)) throw new RangeError('intervalMs must be > 0');
  if (!(phase >= 0 && phase < 1)) throw new RangeError('phase must be in [0, 1)');
  if (!(minDelayMs >= 0) || !Number.isFinite(minDelayMs)) throw new RangeError('minDelayMs must be >= 0');
  const offset = phase * intervalMs;
  let due = (Math.floor((nowMs - offset) / intervalMs) + 1) * intervalMs + offset;
  if (due - nowMs < minDelayMs) due += Math.ceil((minDelayMs - (due - nowMs)) / intervalMs) * intervalMs;
  return due - nowMs;
}

/** What soonerDueAt reads of a location waiting for its scheduled poll. */
export interface ScheduledPoll {
  /** When it is due now (ms since epoch; infinite: never). */
  dueAt: number;
  /** When its live lane last completed a traversal; null: never since this scheduler got it. */
  lastSuccessAt: number | null;
  phase: number;
}

/**
 * The interval became `intervalMs`, shorter than the one `poll` was scheduled with (stretch.ts): its due time at
 * its phase of the shorter interval after its last completed traversal, no earlier than now (at once when that
 * has passed); null when that is not sooner than its due time now, or it never completed a traversal.
 * `reconciling`: polls are reconciliation (webhooks on), at least half an interval apart (phasedDelayMs).
 */
export function soonerDueAt(
  poll: ScheduledPoll,
  intervalMs: number,
  nowMs: number,
  reconciling: boolean,
): number | null {
  const from = poll.lastSuccessAt;
  if (from === null || !(poll.dueAt > nowMs)) return null;
  const due = from + phasedDelayMs(from, intervalMs, poll.phase, reconciling ? intervalMs / 2 : 0);
  return due < poll.dueAt ? Math.max(nowMs, due) : null;
}

/**
 * Why a location waits now, for the /status view ("why it waits"): its interval, the stretch, a grant's hold,
 * its own history turn, a failure backoff, a stop, or a worker (due now). Pure; the scheduler gathers the
 * figures (Scheduler.waitReasons()) and this says which one holds the location.
 */
import type { Lane } from '../lanes/lanes.js';
import type { LocationState } from './scheduled-location.js';

export type WaitReason =
  /** A page of it runs now: `history` is its own history turn, which its live poll waits for. */
  | { kind: 'running'; lane: Lane }
  /** Due now, waiting for a worker (`as`: the kind of turn it waits for, turn-rule.ts). */
  | { kind: 'worker'; as: 'nudge' | 'live' | 'check'; dueSinceMs: number }
  /** Its next scheduled poll, at the configured interval. */
  | { kind: 'interval'; nextRunAt: number; intervalMs: number }
  /** Its next scheduled poll, at the stretched interval (stretch-rule.ts; `by`: what bounds it). */
  | {
      kind: 'stretch';
      nextRunAt: number;
      intervalMs: number;
      configuredMs: number;
      by: 'workers' | 'requests';
    }
  /** Its grant is held (a Retry-After, a spent quota) until then. */
  | { kind: 'hold'; until: number }
  /** A failed page's backoff (health.ts). */
  | { kind: 'backoff'; nextRunAt: number; consecutiveFailures: number }
  /** Stopped by an error (`code`), tried again at `nextRunAt` (null: only a restart helps). */
  | { kind: 'stopped'; code: string | null; nextRunAt: number | null };

/** What the rule reads of a location and the scheduler, at `nowMs`. */
export interface WaitFigures {
  nowMs: number;
  state: LocationState;
  /** The lane of the turn in progress (when running). */
  lane: Lane;
  /** When it is due next (ms; infinite: never). */
  dueAt: number;
  /** Its live poll is due for a nudge; its live lane has completed a traversal here (else a check). */
  nudged: boolean;
  checked: boolean;
  consecutiveFailures: number;
  stoppedBy: string | null;
  /** When its grant's hold ends, if held now (grant-holds.ts); null otherwise. */
  holdEndsAt: number | null;
  /** poll.intervalMs, the interval in force now, and the worker stretch factor (1: workers do not bound it). */
  configuredMs: number;
  effectiveMs: number;
  workerFactor: number;
}

/** Why the location waits now (see the module comment). */
export function waitReason(f: WaitFigures): WaitReason {
  const nextRunAt = Number.isFinite(f.dueAt) ? f.dueAt : null;
  if (f.state === 'running') return { kind: 'running', lane: f.lane };
  if (f.state === 'stopped') return { kind: 'stopped', code: f.stoppedBy, nextRunAt };
  if (f.holdEndsAt !== null) return { kind: 'hold', until: f.holdEndsAt };
  if (f.state === 'backoff')
    return { kind: 'backoff', nextRunAt: nextRunAt ?? f.nowMs, consecutiveFailures: f.consecutiveFailures };
  if (nextRunAt === null) return { kind: 'stopped', code: f.stoppedBy, nextRunAt: null };
  if (nextRunAt <= f.nowMs)
    return { kind: 'worker', as: f.nudged ? 'nudge' : f.checked ? 'live' : 'check', dueSinceMs: nextRunAt };
  if (f.effectiveMs > f.configuredMs)
    return {
      kind: 'stretch',
      nextRunAt,
      intervalMs: f.effectiveMs,
      configuredMs: f.configuredMs,
      by: f.effectiveMs <= f.configuredMs * f.workerFactor ? 'workers' : 'requests',
    };
  return { kind: 'interval', nextRunAt, intervalMs: f.configuredMs };
}

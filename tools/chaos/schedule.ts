/**
 * The fault schedule of a run: a pure function of the seed and the profile. Every kind appears at least its
 * minimum number of times; moments are spread over the fault phase with jitter, in a shuffled order, so
 * faults land at random points of the backfill and of the live phase.
 */
import type { Random } from './random.js';

export const PROCESS_FAULTS = [
  'connector-kill',
  'refresh-kill',
  'broker-kill',
  'registry-stop',
  'rolling-restart',
  'sigstop',
  // Past kafka.transactionTimeoutMs and kafkajs's 30 s request timeout (issue 20): the woken instance's open
  // transaction fails fenced or timed out, and it must never fence back the one that took over (single mode:
  // its replacement; distributed mode: the new owners of its partitions).
  'sigstop-long',
  // Issue 32: the old instance woke and stands by, then its replacement is stopped (a blue/green switch rolled
  // back): the standby must take over and write again. Distributed mode has no replacement: it runs as sigstop.
  'replacement-stopped',
] as const;

export const API_FAULTS = [
  'api-latency',
  'api-429-storm',
  'api-5xx',
  'api-dropped-connections',
  'api-malformed-bodies',
  'api-non-json-errors',
  'api-cursor-rejected',
  'api-token-expiry',
  'api-single-call-failures',
  'api-single-call-newer-version',
  // Issue 32: one grant's quota spent for minutes (429 quota_exhausted, a long Retry-After) while the other
  // grant's locations must stay fresh; the held one resumes after.
  'api-grant-quota-spent',
  // Issue 32: a hidden limit below what the live polls alone need: history still advances, the run settles.
  'api-limit-below-live-demand',
  // Issue 39: a hidden limit above live demand whose refusals say their reset in each header form in turn
  // (X-RateLimit-Reset in delta seconds, epoch seconds, epoch milliseconds; Retry-After as an HTTP-date):
  // live changes must still wait about one interval.
  'api-limit-reset-forms',
  // Issue 39: a bulk import (one same-instant group of hundreds of calls) in one location while cursors
  // expire within a second: its traversal restarts, and the other locations must stay fresh meanwhile.
  'api-cursor-expiry-same-instant',
] as const;

/** Operators' changes to the running connector, sent as signals (`calls-connector signal`). */
export const SIGNAL_FAULTS = [
  // Issue 42: a backfill of a range of one location while the others change and faults land: the range is
  // published once more, completely (the checker's reReadMissing), and nothing is doubled outside it.
  'signal-backfill',
] as const;

/**
 * Issue 40: faults of the webhook deliveries (faults/webhook-faults.ts), over the background of 20 % of the
 * deliveries dropped: kill -9 of the process that receives them, a broker restart while they come, forged
 * and replayed floods, a sender whose duplicate arrives while its first attempt is pending.
 */
export const WEBHOOK_FAULTS = [
  'webhook-receiver-kill',
  'webhook-broker-restart',
  'webhook-forged-flood',
  'webhook-replay-flood',
  'webhook-retry-pending',
] as const;

export type FaultKind =
  | (typeof PROCESS_FAULTS)[number]
  | (typeof API_FAULTS)[number]
  | (typeof SIGNAL_FAULTS)[number]
  | (typeof WEBHOOK_FAULTS)[number];

export interface PlannedFault {
  /** Milliseconds after the start of the fault phase. */
  atMs: number;
  kind: FaultKind;
  /** How long the fault lasts (down time, storm window, SIGSTOP time), ms. */
  durationMs: number;
  /** A per-fault seed for its own choices (statuses, rates, delays). */
  seed: number;
}

/**
 * The timeouts the chaos config sets (run.ts) and the pauses are measured against: kafka.transactionTimeoutMs,
 * kafkajs's request timeout (the connector keeps kafkajs's default) and, in distributed mode,
 * kafka.groupSessionTimeoutMs.
 */
export const TIMEOUTS = {
  transactionMs: 30_000,
  requestMs: 30_000,
  sessionMs: 10_000,
  /**
   * api.retry.maxRetryAfterMs: a Retry-After this long or longer parks the grant, asked again after this
   * long (the deployed 5 min would make a held grant's resumption take most of a short run).
   */
  maxRetryAfterMs: 10_000,
} as const;

export interface Profile {
  name: 'short' | 'full';
  /** connector.mode: distributed (a short SIGSTOP must outlast the group session timeout). */
  distributed: boolean;
  locations: number;
  callsPerLocation: number;
  faultPhaseMs: number;
  /** Minimum count per kind. */
  counts: Record<FaultKind, number>;
  /**
   * A quiet stretch before the first fault (the background faults only: 20 % of the deliveries dropped, a flaky
   * API): the changes made in it are outside every fault window, where the delivered changes' p99 is held to its
   * goal (webhook-attribution.ts). The short form's faults follow each other without a gap.
   */
  quietBaselineMs: number;
  liveUpdatesPerSecond: number;
  liveCreatesPerSecond: number;
  settleTimeoutMs: number;
  /** Run the hostile-bodies phase after the checker (the short form leaves it to the component tests). */
  hostileBodies: boolean;
  /** How long each hostile body is served to its connector process. */
  hostileCaseMs: number;
  /**
   * `poll.stoppedRetry.initialDelayMs`: how soon a stopped location is retried, and how often one paused by a
   * lost grant looks for the new one. The short form shortens it (10 s, not the default minute), so that a
   * refresh-kill's recovery after the operator's login does not take most of a CI minute; the full run keeps
   * the default, as deployed.
   */
  stoppedRetryInitialDelayMs?: number;
}

export function profile(name: 'short' | 'full', minutes?: number, distributed = false): Profile {
  if (name === 'short') {
    return {
      name,
      distributed,
      locations: 12,
      callsPerLocation: 250,
      faultPhaseMs: (minutes ?? 1) * 60_000,
      counts: {
        'connector-kill': 2,
        'refresh-kill': 1,
        // The short form's broker kill is webhook-broker-restart's (the same outage, deliveries flowing through
        // it): a broker restart costs about 20 s of CI's length, one is enough.
        'broker-kill': 0,
        'registry-stop': 1,
        'rolling-restart': 1,
        // replacement-stopped holds sigstop's sequence (single mode: a pause, a replacement, the woken one
        // standing by; distributed mode: it runs as sigstop), then stops the replacement: the short form runs
        // it instead of a plain sigstop, to keep CI's length.
        sigstop: 0,
        'sigstop-long': 1,
        'replacement-stopped': 1,
        ...Object.fromEntries(API_FAULTS.map((k) => [k, 1])),
        ...Object.fromEntries(SIGNAL_FAULTS.map((k) => [k, 1])),
        ...Object.fromEntries(WEBHOOK_FAULTS.map((k) => [k, 1])),
      } as Record<FaultKind, number>,
      quietBaselineMs: 10_000,
      liveUpdatesPerSecond: 3,
      liveCreatesPerSecond: 1,
      settleTimeoutMs: 180_000,
      hostileBodies: false,
      hostileCaseMs: 6000,
      stoppedRetryInitialDelayMs: 10_000,
    };
  }
  const m = minutes ?? 15;
  const scale = Math.max(1, m / 15);
  return {
    name,
    distributed,
    locations: 200,
    // 1,080 per location: 216,000 calls, of which about 201,000 are listable (the rest third-party or unrepresentable).
    callsPerLocation: 1080,
    faultPhaseMs: m * 60_000,
    counts: {
      'connector-kill': Math.ceil(18 * scale),
      'refresh-kill': Math.ceil(4 * scale),
      'broker-kill': Math.ceil(3 * scale),
      'registry-stop': Math.ceil(2 * scale),
      'rolling-restart': Math.ceil(3 * scale),
      sigstop: Math.ceil(2 * scale),
      'sigstop-long': Math.ceil(1 * scale),
      'replacement-stopped': Math.ceil(1 * scale),
      ...Object.fromEntries(API_FAULTS.map((k) => [k, Math.ceil(1 * scale)])),
      ...Object.fromEntries(SIGNAL_FAULTS.map((k) => [k, Math.ceil(1 * scale)])),
      'webhook-receiver-kill': Math.ceil(3 * scale),
      'webhook-broker-restart': Math.ceil(1 * scale),
      'webhook-forged-flood': Math.ceil(2 * scale),
      'webhook-replay-flood': Math.ceil(2 * scale),
      'webhook-retry-pending': Math.ceil(2 * scale),
    } as Record<FaultKind, number>,
    quietBaselineMs: 60_000,
    liveUpdatesPerSecond: 20,
    liveCreatesPerSecond: 5,
    settleTimeoutMs: 600_000,
    hostileBodies: true,
    hostileCaseMs: 12_000,
  };
}

function durationFor(kind: FaultKind, random: Random, p: Profile): number {
  const short = p.name === 'short';
  switch (kind) {
    case 'connector-kill':
    case 'refresh-kill':
    case 'webhook-receiver-kill':
      return random.int(0, 2000); // time before the restart
    case 'webhook-broker-restart':
      return random.int(2000, short ? 5000 : 15_000); // as broker-kill's
    case 'webhook-forged-flood':
    case 'webhook-replay-flood':
      return 0; // as long as its requests take
    case 'webhook-retry-pending':
      return short ? random.int(2000, 4000) : random.int(5000, 15_000);
    case 'broker-kill':
      return random.int(2000, short ? 5000 : 15_000);
    case 'registry-stop':
      return random.int(3000, short ? 8000 : 30_000);
    case 'rolling-restart':
      return 0;
    case 'sigstop':
    case 'replacement-stopped':
      // Distributed: past the group session timeout, so that the group moves the paused one's partitions.
      return p.distributed
        ? random.int(TIMEOUTS.sessionMs + 2000, TIMEOUTS.sessionMs + 10_000)
        : random.int(5000, 15_000);
    case 'sigstop-long': {
      // Past kafka.transactionTimeoutMs and kafkajs's request timeout (both 30 s in the chaos config).
      const past = Math.max(TIMEOUTS.transactionMs, TIMEOUTS.requestMs) + 5000;
      return random.int(past, past + (short ? 5000 : 25_000));
    }
    case 'api-grant-quota-spent':
      // "For minutes" in a full run; the short form keeps CI's length: past TIMEOUTS.maxRetryAfterMs, so that
      // the held grant is parked, asked again and refused again before the quota comes back.
      return short ? random.int(22_000, 28_000) : random.int(120_000, 240_000);
    case 'api-limit-below-live-demand':
      return short ? random.int(10_000, 15_000) : random.int(60_000, 120_000);
    case 'api-limit-reset-forms':
      // Four sub-windows, one header form each.
      return short ? random.int(16_000, 20_000) : random.int(80_000, 120_000);
    case 'api-cursor-expiry-same-instant':
      return short ? random.int(12_000, 18_000) : random.int(30_000, 60_000);
    case 'signal-backfill':
      // How long its `--wait` waits for `done` (in the background: the fault ends once it is sent), past the
      // fault phase and the settle phase's bound.
      return short ? 300_000 : 900_000;
    default:
      return random.int(short ? 2000 : 5000, short ? 4000 : 20_000);
  }
}

export function planFaults(random: Random, p: Profile): PlannedFault[] {
  const bag: FaultKind[] = [];
  for (const [kind, n] of Object.entries(p.counts) as [FaultKind, number][])
    for (let i = 0; i < n; i++) bag.push(kind);
  for (let i = bag.length - 1; i > 0; i--) {
    const j = random.int(0, i);
    [bag[i], bag[j]] = [bag[j] as FaultKind, bag[i] as FaultKind];
  }
  const slot = p.faultPhaseMs / bag.length;
  return bag.map((kind, i) => ({
    atMs: Math.round((i + random.between(0.1, 0.9)) * slot),
    kind,
    durationMs: durationFor(kind, random, p),
    seed: random.int(1, 2 ** 31 - 1),
  }));
}

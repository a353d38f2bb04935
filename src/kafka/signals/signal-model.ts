/**
 * Signals: requests to change what a running connector does to one location, sent through the signals topic
 * (signal-topic.ts) by `calls-connector signal ...` and answered there by the instance that owns the location.
 *
 * - `backfill` {location, since?, until?}: read that range of the location's calls again, beside its live polls
 *   (absent since: from the location's start; absent until: up to the moment the owner accepts it);
 * - `pause` / `resume` {location}: stop polling the location until resumed (it survives restarts and handovers:
 *   the paused state is the fold of the done pauses and resumes, signal-ledger.ts);
 * - `reset` {location, to?}: the location's offset set to start at `to` (absent: start over), while running.
 *
 * Each signal gets one outcome, replaced as it moves on: `accepted` (the owner took it on; a backfill then runs),
 * `done` (its effect is in place), or `refused` with a reason (a stable code and a sentence), for a location no
 * running instance is configured with, or a signal this version cannot read. `done` and `refused` are final.
 *
 * Pure: the shapes, their validation and their JSON form. Validation is the same for the CLI and for a record
 * read back, so a signal written by another tool is refused with the same words the CLI would print.
 */
import { compareInstants, parseInstant } from '../../time/instant.js';

export const SIGNAL_KINDS = ['backfill', 'pause', 'resume', 'reset'] as const;
export type SignalKind = (typeof SIGNAL_KINDS)[number];

/** What a signal asks, as a person writes it (the CLI's options). */
export interface SignalRequest {
  kind: SignalKind;
  location: string;
  /** backfill: from this instant (inclusive, as the listing's filter); absent: the location's start. */
  since?: string;
  /** backfill: up to this instant; absent: up to the moment the owner accepts the signal. */
  until?: string;
  /** reset: the offset's new `since`; absent: the offset is removed (the location starts over). */
  to?: string;
}

/** A signal as the topic carries it. */
export interface Signal extends SignalRequest {
  /** A UUID, chosen by the sender: the key of the signal and of its outcome. */
  id: string;
  /** When it was sent (RFC 3339, the sender's clock). */
  requestedAt: string;
  /** Who sent it, as the sender names itself (user@host); for the log and `/status`, never trusted. */
  requestedBy: string;
}

export const OUTCOME_STATES = ['accepted', 'done', 'refused'] as const;
export type OutcomeState = (typeof OUTCOME_STATES)[number];

/** Why a signal was refused: a stable code (what a script tests) and a sentence (what a person reads). */
export interface RefusalReason {
  code: string;
  message: string;
}

/** The answer to a signal; the latest one written for a signal id is its outcome. */
export interface SignalOutcome {
  signalId: string;
  state: OutcomeState;
  /** Set exactly when `state` is `refused`. */
  reason?: RefusalReason;
  /** When the instance answered (RFC 3339, its clock). */
  at: string;
  /** The instance that answered (its client id and host). */
  instance: string;
}

/** Codes of the refusals the connector itself gives. */
export const REFUSALS = {
  /** The location is in no running instance's configuration (`sources[].locations`). */
  locationNotConfigured: 'LOCATION_NOT_CONFIGURED',
  /** The signal record is not one this version can act on (another tool wrote it, or a newer version). */
  invalidSignal: 'SIGNAL_INVALID',
} as const;

export function isFinal(state: OutcomeState): boolean {
  return state !== 'accepted';
}

const LOCATION_UID = /^[0-9a-fA-F-]{36}$/;
const SIGNAL_ID = /^[0-9a-fA-F-]{36}$/;

/** The options each kind takes besides `location`. */
const OPTIONS_OF: Record<SignalKind, readonly ('since' | 'until' | 'to')[]> = {
  backfill: ['since', 'until'],
  pause: [],
  resume: [],
  reset: ['to'],
};

export type Checked<T> = { ok: true; value: T } | { ok: false; problems: string[] };

/**
 * Checks a request: a known kind, a location uid, RFC 3339 instants with an offset, only the options its kind
 * takes, and for a backfill `since` before `until` and `since` not after `nowMs`. Every problem is named at once.
 */
export function checkSignalRequest(input: Record<string, unknown>, nowMs: number): Checked<SignalRequest> {
  const problems: string[] = [];
  const { kind, location } = input;
  if (typeof kind !== 'string' || !(SIGNAL_KINDS as readonly string[]).includes(kind)) {
    problems.push(`kind must be one of ${SIGNAL_KINDS.join(', ')}; got ${JSON.stringify(kind)}`);
    return { ok: false, problems };
  }
  const signalKind = kind as SignalKind;
  if (typeof location !== 'string' || !LOCATION_UID.test(location))
    problems.push(`location must be a location uid (UUID); got ${JSON.stringify(location)}`);
  const request: SignalRequest = { kind: signalKind, location: String(location) };
  for (const option of ['since', 'until', 'to'] as const) {
    const value = input[option];
    if (value === undefined || value === null) continue;
    if (!OPTIONS_OF[signalKind].includes(option)) {
      problems.push(`${option} does not apply to ${signalKind} (it takes ${describeOptions(signalKind)})`);
      continue;
    }
    if (typeof value !== 'string' || parseInstant(value) === null) {
      problems.push(
        `${option} must be an RFC 3339 date-time with an offset, e.g. 2024-05-01T00:00:00Z; got ${JSON.stringify(value)}`,
      );
      continue;
    }
    request[option] = value;
  }
  const since = request.since === undefined ? null : parseInstant(request.since);
  const until = request.until === undefined ? null : parseInstant(request.until);
  if (since !== null && until !== null && compareInstants(since, until) >= 0)
    problems.push(`since (${request.since}) must be before until (${request.until})`);
  if (since !== null && since.epochSeconds * 1000 > nowMs)
    problems.push(`since (${request.since}) is in the future: there is nothing to read again yet`);
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: request };
}

function describeOptions(kind: SignalKind): string {
  const options = OPTIONS_OF[kind];
  return options.length === 0 ? 'no option but the location' : options.map((o) => `--${o}`).join(', ');
}

/** A record of the signals topic, decoded. */
export type SignalTopicEntry =
  | { type: 'signal'; signal: Signal }
  /** A signal record this version cannot act on: answered with a refusal naming the problems. */
  | { type: 'invalid-signal'; signalId: string; problems: string[] }
  | { type: 'outcome'; outcome: SignalOutcome };

/** The record key of a signal of connector `connectorName`. */
export function signalKey(connectorName: string, signalId: string): string {
  return `${connectorName}/signal/${signalId}`;
}

/** The record key of a signal's outcome (beside the signal's own: compaction keeps both, the latest of each). */
export function outcomeKey(connectorName: string, signalId: string): string {
  return `${connectorName}/outcome/${signalId}`;
}

export function encodeSignal(signal: Signal): Buffer {
  return Buffer.from(JSON.stringify({ v: 1, ...signal }), 'utf8');
}

export function encodeOutcome(outcome: SignalOutcome): Buffer {
  return Buffer.from(JSON.stringify({ v: 1, ...outcome }), 'utf8');
}

/**
 * The entry a record of the signals topic carries for connector `connectorName`; null for a record that is not
 * this connector's (another connector sharing the topic), a tombstone, or one whose key or outcome cannot be
 * read (skipped: nothing can be answered without a signal id). `nowMs` only serves the validation's "since in
 * the future" rule, judged as of reading.
 */
export function decodeSignalRecord(
  connectorName: string,
  key: Buffer | null,
  value: Buffer | null,
  nowMs: number,
): SignalTopicEntry | null {
  if (key === null || value === null) return null;
  const prefix = `${connectorName}/`;
  const text = key.toString('utf8');
  if (!text.startsWith(prefix)) return null;
  const [type, id, ...rest] = text.slice(prefix.length).split('/');
  if (id === undefined || rest.length > 0 || !SIGNAL_ID.test(id)) return null;
  const parsed = parseJsonObject(value);
  if (type === 'outcome') {
    const outcome = parsed === null ? null : readOutcome(parsed);
    return outcome === null || outcome.signalId !== id ? null : { type: 'outcome', outcome };
  }
  if (type !== 'signal') return null;
  if (parsed === null) return { type: 'invalid-signal', signalId: id, problems: ['not a JSON object'] };
  if (parsed.v !== 1)
    return {
      type: 'invalid-signal',
      signalId: id,
      problems: [`unknown version ${JSON.stringify(parsed.v)}`],
    };
  const checked = checkSignalRequest(parsed, nowMs);
  if (!checked.ok) return { type: 'invalid-signal', signalId: id, problems: checked.problems };
  const { requestedAt, requestedBy } = parsed;
  return {
    type: 'signal',
    signal: {
      ...checked.value,
      id,
      requestedAt: typeof requestedAt === 'string' ? requestedAt : '',
      requestedBy: typeof requestedBy === 'string' ? requestedBy : '',
    },
  };
}

function parseJsonObject(value: Buffer): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(value.toString('utf8'));
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

function readOutcome(parsed: Record<string, unknown>): SignalOutcome | null {
  const { signalId, state, reason, at, instance } = parsed;
  if (typeof signalId !== 'string' || typeof at !== 'string' || typeof instance !== 'string') return null;
  if (typeof state !== 'string' || !(OUTCOME_STATES as readonly string[]).includes(state)) return null;
  const outcome: SignalOutcome = { signalId, state: state as OutcomeState, at, instance };
  if (state === 'refused') {
    const { code, message } = (reason ?? {}) as Record<string, unknown>;
    outcome.reason = {
      code: typeof code === 'string' ? code : 'UNKNOWN',
      message: typeof message === 'string' ? message : '',
    };
  }
  return outcome;
}

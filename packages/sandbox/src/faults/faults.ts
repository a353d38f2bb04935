/**
 * Faults the sandbox injects on purpose, each a rate (0..1 per request) or a setting, all changeable at
 * run time (admin endpoint or SandboxAdmin.setFaults).
 *
 * Deterministic: the decision for the n-th faultable request depends only on (seed, n, fault kind), see
 * hashToUnit. A client that sends its requests one after the other sees the same faults on every run with
 * the same seed; changing one rate does not move the others.
 *
 * Faults apply to the calls endpoints (/v4/...), and to POST /oauth/token when `includeTokenEndpoint`;
 * never to /oauth/authorize pages nor to the admin endpoint.
 *
 * Faults of one call (singleCallFailures, singleCallVersionSkewRate) are drawn per uid instead, from
 * (seed, uid, kind): the same calls fail on every run with the same seed, whatever order concurrent
 * single-call requests arrive in.
 */
import { hashToUnit, normalQuantile } from '../random.js';
import {
  checkRateLimit,
  RETRY_AFTER_FORMS,
  type RateLimitSettings,
  type RetryAfterForm,
} from './rate-limit.js';

export interface FaultSettings {
  seed: number;
  /** Added latency, log-normal with this median and 99th percentile; null = none. */
  latency: { medianMs: number; p99Ms: number } | null;
  /** Share of requests answered 429 rate_limited with Retry-After: retryAfterSeconds. */
  rateLimitRate: number;
  retryAfterSeconds: number;
  /** How the Retry-After of every 429 (drawn or enforced) is written: delay-seconds, or an HTTP-date. */
  retryAfterForm: RetryAfterForm;
  /**
   * An enforced rate (token bucket, rate-limit.ts): requests beyond it are answered 429 with the Retry-After
   * of the next free token; null = no limit. Applies before the added latency, as a gateway's would.
   */
  rateLimit: RateLimitSettings | null;
  /** Share of requests answered with a server error, the status drawn from serverErrorStatuses. */
  serverErrorRate: number;
  serverErrorStatuses: number[];
  /**
   * The body of injected 429 and 5xx answers, sent as-is (an HTML error page, plain text, JSON of another
   * layout: what a gateway in front of an API sends); null = the sandbox's own JSON error.
   */
  errorBody: { body: string; contentType: string } | null;
  /** Share of responses cut off: headers and part of the body sent, then the socket destroyed. */
  dropConnectionRate: number;
  /** Share of 200 responses whose JSON body is malformed (truncated and garbled). */
  malformedJsonRate: number;
  /** Lifetime of listing cursors on the sandbox clock (short values make them expire: 410 cursor_expired). */
  cursorTtlMs: number;
  /** Share of authenticated requests whose (otherwise valid) access token expires right then: 401 token_expired. */
  accessTokenEarlyExpiryRate: number;
  /** Share of refresh requests whose refresh token is revoked right then: 400 invalid_grant. */
  refreshTokenRevocationRate: number;
  /**
   * How the listing answers a cursor it refuses (expired, not its own, or drawn by cursorRejectionRate),
   * e.g. a 400 with a body of a shape no configuration names; null = its own 410 cursor_expired or
   * 400 invalid_cursor.
   */
  cursorRejection: CannedAnswer | null;
  /** Share of listing requests carrying a valid cursor that are refused anyway, as if it had expired. */
  cursorRejectionRate: number;
  /**
   * Failures of GET /v4/calls/{uid}, per call: the first rule whose draw for the uid is below its `rate`
   * applies, and the call's first `attempts` single-call requests get its `answer` (0 = all of them).
   * A 5xx or a non-JSON 200 with a few attempts is a transient fault; a 4xx with 0 is a refusal.
   */
  singleCallFailures: SingleCallFailure[];
  /** Share of calls whose GET /v4/calls/{uid} reports an updatedAt 1 s after the listed one (another version). */
  singleCallVersionSkewRate: number;
  /** Also inject latency, 429, 5xx, drops and malformed bodies into POST /oauth/token. */
  includeTokenEndpoint: boolean;
  /**
   * One grant's quota spent (issue 32): every listing of one of these locations and every single-call
   * request for one of their calls is answered 429 quota_exhausted with `Retry-After: retryAfterSeconds`
   * (after authentication, as a quota is the grant's), while requests for other locations go on. The
   * sandbox's grants each cover every location and a client's grants divide the locations among them
   * (the connector's `sources[].grant`), so the locations name the grant. null = none.
   */
  grantQuotaSpent: GrantQuotaSpent | null;
}

export interface GrantQuotaSpent {
  locations: string[];
  retryAfterSeconds: number;
}

/** An answer sent as-is, for error shapes of other APIs (JSON of any layout, HTML, plain text). */
export interface CannedAnswer {
  status: number;
  body: string;
  contentType: string;
}

export interface SingleCallFailure {
  rate: number;
  attempts: number;
  answer: CannedAnswer;
}

export const DEFAULT_FAULTS: FaultSettings = {
  seed: 1,
  latency: null,
  rateLimitRate: 0,
  retryAfterSeconds: 1,
  retryAfterForm: 'delay-seconds',
  rateLimit: null,
  serverErrorRate: 0,
  serverErrorStatuses: [500, 502, 503],
  errorBody: null,
  dropConnectionRate: 0,
  malformedJsonRate: 0,
  cursorTtlMs: 24 * 3600_000,
  accessTokenEarlyExpiryRate: 0,
  refreshTokenRevocationRate: 0,
  cursorRejection: null,
  cursorRejectionRate: 0,
  singleCallFailures: [],
  singleCallVersionSkewRate: 0,
  includeTokenEndpoint: false,
  grantQuotaSpent: null,
};

const RATE_KEYS = [
  'rateLimitRate',
  'serverErrorRate',
  'dropConnectionRate',
  'malformedJsonRate',
  'accessTokenEarlyExpiryRate',
  'refreshTokenRevocationRate',
  'cursorRejectionRate',
  'singleCallVersionSkewRate',
] as const;

const MAX_CANNED_BODY = 64 * 1024;
const MAX_SINGLE_CALL_RULES = 10;

function isRate(v: unknown): v is number {
  return typeof v === 'number' && v >= 0 && v <= 1;
}

function checkCannedAnswer(v: unknown, name: string): void {
  const answer = v as Partial<CannedAnswer> | null;
  if (
    typeof answer !== 'object' ||
    answer === null ||
    !Number.isInteger(answer.status) ||
    (answer.status as number) < 200 ||
    (answer.status as number) > 599 ||
    typeof answer.body !== 'string' ||
    answer.body.length > MAX_CANNED_BODY ||
    typeof answer.contentType !== 'string' ||
    answer.contentType === ''
  ) {
    throw new RangeError(
      `${name} must be {status: 200..599, body: string of at most ${MAX_CANNED_BODY} chars, contentType: non-empty string}`,
    );
  }
}

function checkErrorBody(v: unknown): void {
  const e = v as { body?: unknown; contentType?: unknown } | null;
  if (
    typeof e !== 'object' ||
    e === null ||
    typeof e.body !== 'string' ||
    e.body.length > MAX_CANNED_BODY ||
    typeof e.contentType !== 'string' ||
    e.contentType === ''
  ) {
    throw new RangeError(
      `faults.errorBody must be null or {body: string of at most ${MAX_CANNED_BODY} chars, contentType: non-empty string}`,
    );
  }
}

function checkSingleCallFailures(v: unknown): void {
  if (!Array.isArray(v) || v.length > MAX_SINGLE_CALL_RULES)
    throw new RangeError(
      `faults.singleCallFailures must be a list of at most ${MAX_SINGLE_CALL_RULES} rules`,
    );
  v.forEach((rule: unknown, i) => {
    const r = rule as Partial<SingleCallFailure> | null;
    if (typeof r !== 'object' || r === null || !isRate(r.rate))
      throw new RangeError(`faults.singleCallFailures[${i}].rate must be a number within 0..1`);
    if (!Number.isInteger(r.attempts) || (r.attempts as number) < 0)
      throw new RangeError(`faults.singleCallFailures[${i}].attempts must be an integer >= 0`);
    checkCannedAnswer(r.answer, `faults.singleCallFailures[${i}].answer`);
  });
}

/** Merges a partial update into settings; throws RangeError naming the first bad key. */
export function mergeFaults(base: FaultSettings, update: Partial<FaultSettings>): FaultSettings {
  const merged: FaultSettings = { ...base, ...update };
  for (const key of RATE_KEYS) {
    if (!isRate(merged[key])) throw new RangeError(`faults.${key} must be a number within 0..1`);
  }
  if (merged.cursorRejection !== null) checkCannedAnswer(merged.cursorRejection, 'faults.cursorRejection');
  if (merged.errorBody !== null) checkErrorBody(merged.errorBody);
  if (merged.rateLimit !== null) checkRateLimit(merged.rateLimit);
  checkSingleCallFailures(merged.singleCallFailures);
  if (!Number.isInteger(merged.seed)) throw new RangeError('faults.seed must be an integer');
  if (!(Number.isFinite(merged.retryAfterSeconds) && merged.retryAfterSeconds >= 0)) {
    throw new RangeError('faults.retryAfterSeconds must be >= 0');
  }
  if (!RETRY_AFTER_FORMS.includes(merged.retryAfterForm))
    throw new RangeError("faults.retryAfterForm must be 'delay-seconds' or 'http-date'");
  if (!(Number.isFinite(merged.cursorTtlMs) && merged.cursorTtlMs >= 0))
    throw new RangeError('faults.cursorTtlMs must be >= 0');
  if (
    !Array.isArray(merged.serverErrorStatuses) ||
    merged.serverErrorStatuses.length === 0 ||
    merged.serverErrorStatuses.some((s) => !Number.isInteger(s) || s < 500 || s > 599)
  ) {
    throw new RangeError('faults.serverErrorStatuses must be a non-empty list of 5xx statuses');
  }
  if (merged.latency !== null) {
    const { medianMs, p99Ms } = merged.latency;
    if (!(medianMs >= 0 && p99Ms >= medianMs))
      throw new RangeError('faults.latency needs 0 <= medianMs <= p99Ms');
  }
  if (typeof merged.includeTokenEndpoint !== 'boolean')
    throw new RangeError('faults.includeTokenEndpoint must be boolean');
  if (merged.grantQuotaSpent !== null) checkGrantQuotaSpent(merged.grantQuotaSpent);
  return merged;
}

function checkGrantQuotaSpent(v: unknown): void {
  const q = v as Partial<GrantQuotaSpent> | null;
  if (
    typeof q !== 'object' ||
    q === null ||
    !Array.isArray(q.locations) ||
    q.locations.length === 0 ||
    q.locations.some((l) => typeof l !== 'string') ||
    !(
      typeof q.retryAfterSeconds === 'number' &&
      Number.isInteger(q.retryAfterSeconds) &&
      q.retryAfterSeconds >= 1
    )
  )
    throw new RangeError(
      'faults.grantQuotaSpent must be null or {locations: non-empty list of location uids, retryAfterSeconds: integer >= 1}',
    );
}

/** Whether `locationUid`'s grant has its quota spent (faults.grantQuotaSpent): the Retry-After seconds, else null. */
export function quotaSpentFor(settings: FaultSettings, locationUid: string): number | null {
  const spent = settings.grantQuotaSpent;
  return spent !== null && spent.locations.includes(locationUid) ? spent.retryAfterSeconds : null;
}

/** What to do to one request, decided before it is handled. */
export interface FaultPlan {
  delayMs: number;
  /** Answer with this instead of handling the request. */
  reject: { status: number; retryAfterSeconds?: number } | null;
  /** After handling: cut the response off / garble its JSON (successful responses only). */
  drop: boolean;
  malformed: boolean;
  /** For authenticated requests: expire the presented access token now. */
  expireToken: boolean;
  /** For refresh requests: revoke the presented refresh token now. */
  revokeRefreshToken: boolean;
  /** For listing requests with a valid cursor: refuse it anyway. */
  rejectCursor: boolean;
}

/** One independent draw per kind of fault. */
const Salt = {
  Latency: 1,
  RateLimit: 2,
  ServerError: 3,
  ServerErrorStatus: 4,
  Drop: 5,
  Malformed: 6,
  Expire: 7,
  Revoke: 8,
  CursorReject: 9,
  VersionSkew: 10,
  /** Rule i of singleCallFailures draws with salt SingleCallFailure + i. */
  SingleCallFailure: 20,
} as const;
type Salt = number;

const Z99 = normalQuantile(0.99);

/** Log-normal delay for a uniform draw u: exp(mu + sigma·z), mu = ln(median), sigma from the p99. */
export function logNormalDelayMs(u: number, medianMs: number, p99Ms: number): number {
  if (medianMs <= 0) return 0;
  const mu = Math.log(medianMs);
  const sigma = p99Ms > medianMs ? (Math.log(p99Ms) - mu) / Z99 : 0;
  return Math.exp(mu + sigma * normalQuantile(u));
}

/** Pure: the plan for the n-th faultable request under these settings. */
export function planFaults(settings: FaultSettings, n: number): FaultPlan {
  const draw = (salt: Salt): number => hashToUnit(settings.seed, n, salt);
  const delayMs =
    settings.latency === null
      ? 0
      : logNormalDelayMs(draw(Salt.Latency), settings.latency.medianMs, settings.latency.p99Ms);
  let reject: FaultPlan['reject'] = null;
  if (draw(Salt.RateLimit) < settings.rateLimitRate) {
    reject = { status: 429, retryAfterSeconds: settings.retryAfterSeconds };
  } else if (draw(Salt.ServerError) < settings.serverErrorRate) {
    const statuses = settings.serverErrorStatuses;
    reject = { status: statuses[Math.floor(draw(Salt.ServerErrorStatus) * statuses.length)] ?? 500 };
  }
  return {
    delayMs,
    reject,
    drop: draw(Salt.Drop) < settings.dropConnectionRate,
    malformed: draw(Salt.Malformed) < settings.malformedJsonRate,
    expireToken: draw(Salt.Expire) < settings.accessTokenEarlyExpiryRate,
    revokeRefreshToken: draw(Salt.Revoke) < settings.refreshTokenRevocationRate,
    rejectCursor: draw(Salt.CursorReject) < settings.cursorRejectionRate,
  };
}

/** A stable 32-bit number for a uid (FNV-1a), so per-call draws do not depend on request order. */
function uidNumber(uid: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < uid.length; i++) {
    hash ^= uid.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** What GET /v4/calls/{uid} does to one call, drawn from (seed, uid). */
export type SingleCallFault = { kind: 'answer'; answer: CannedAnswer } | { kind: 'version-skew' } | null;

/**
 * Pure: the fault of the single-call request for `uid` that is its `attempt`-th (0-based). A failure rule
 * wins over the version skew (a call whose first GETs fail may report another version once they pass).
 */
export function planSingleCallFault(settings: FaultSettings, uid: string, attempt: number): SingleCallFault {
  const n = uidNumber(uid);
  const rule = settings.singleCallFailures.find(
    (r, i) => hashToUnit(settings.seed, n, Salt.SingleCallFailure + i) < r.rate,
  );
  if (rule !== undefined && (rule.attempts === 0 || attempt < rule.attempts))
    return { kind: 'answer', answer: rule.answer };
  if (hashToUnit(settings.seed, n, Salt.VersionSkew) < settings.singleCallVersionSkewRate)
    return { kind: 'version-skew' };
  return null;
}

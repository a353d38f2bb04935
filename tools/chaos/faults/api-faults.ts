/**
 * The faults the sandbox applies to the calls API, one window each: latency, 429 storms, 5xx, dropped
 * connections, malformed bodies, a gateway's non-JSON errors, rejected cursors, early token expiry, per-call
 * failures and newer versions; and issue 32's: one grant's quota spent while the other must stay fresh, and
 * a hidden limit below what the live polls alone need. After a window the background rate is back.
 */
import { LIVE_DEMAND_INTERVAL_MS, POLL_INTERVAL_MS } from '../connector-config.js';
import {
  advanced,
  budgetIntervalMs,
  historyProgress,
  historyStarved,
  limitAboveLiveDemand,
  limitBelowLiveDemand,
  staleLocations,
  type GrantName,
  type OffsetReading,
} from '../fault-checks.js';
import type { Fleet } from '../instances.js';
import { fleetCounter } from '../fleet-counters.js';
import { effectiveIntervalSeconds } from '../interval-sampler.js';
import { sleep, until } from '../processes.js';
import type { Random } from '../random.js';
import type { SandboxAdmin } from '../sandbox-admin.js';
import type { TruthCall } from '../judge.js';
import type { FaultKind, PlannedFault } from '../schedule.js';
import { backgroundFaults, NO_FAULTS } from './background.js';
import { RESUME_CAP_MS, type FaultReport, type FaultResult } from './outcome.js';

/** A grant's spent quota, as the sandbox announces it: 15 minutes (the hold itself is the fault's duration). */
const QUOTA_RETRY_AFTER_SECONDS = 900;
/** How long after its live change a location must have committed a page (a poll, its enrichment, a commit). */
const FRESH_LEAD_MS = 10_000;

/** What the API faults need of the run. */
export interface ApiFaultContext {
  admin: Pick<SandboxAdmin, 'call'>;
  /** The run's seed: the background faults restored after a window. */
  seed: number;
  /** The running instances' metrics (the effective poll interval under a hidden limit). */
  fleet: Pick<Fleet, 'currentRunning' | 'metricsPort'>;
  locations: readonly string[];
  grantLocations: Readonly<Record<GrantName, readonly string[]>>;
  /**
   * When each location had a change announced by a delivery taken (202 through the ingress,
   * webhook-ingress.ts): with webhooks on, such a change is polled within a second (a nudge); one whose
   * delivery was dropped waits up to one and a half reconcile intervals, longer than a short fault.
   */
  announcedAt: () => ReadonlyMap<string, readonly number[]>;
  offsetReading: () => Promise<OffsetReading>;
  report: FaultReport;
  /** Live changes per second (updates and creations): the live demand of single-call requests. */
  changesPerSecond: number;
  /** A bulk import a fault made, for the history and the freshness rule (live-changes.ts imported). */
  imported: (calls: readonly TruthCall[], madeAt: number) => void;
  /** Calls per bulk import (api-cursor-expiry-same-instant). */
  importSize: number;
}

/** Answers of other APIs' shapes, none of which the connector's configuration names. */
const CURSOR_REFUSALS = [
  {
    status: 400,
    body: '{"errors":[{"detail":"pagination token is stale"}]}',
    contentType: 'application/json',
  },
  { status: 422, body: 'Pagination token is stale', contentType: 'text/plain' },
  { status: 404, body: '<html><body><h1>Not Found</h1></body></html>', contentType: 'text/html' },
  { status: 409, body: '{"message":"cursor no longer valid","code":12}', contentType: 'application/json' },
] as const;

const GATEWAY_ERRORS = [
  { body: '<html><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>', contentType: 'text/html' },
  { body: 'upstream connect error or disconnect/reset before headers', contentType: 'text/plain' },
] as const;

const HTML_503 = {
  status: 503,
  body: '<html><body>503 Service Unavailable</body></html>',
  contentType: 'text/html',
};

/** The sandbox settings of one API fault window. */
function apiFaultSettings(kind: FaultKind, random: Random): Record<string, unknown> {
  switch (kind) {
    case 'api-latency':
      return { latency: { medianMs: random.int(100, 400), p99Ms: random.int(2000, 6000) } };
    case 'api-429-storm':
      return { rateLimitRate: random.between(0.5, 0.9), retryAfterSeconds: random.int(1, 3) };
    case 'api-5xx':
      return { serverErrorRate: random.between(0.3, 0.6) };
    case 'api-dropped-connections':
      return { dropConnectionRate: random.between(0.1, 0.3) };
    case 'api-malformed-bodies':
      return { malformedJsonRate: random.between(0.05, 0.2) };
    case 'api-non-json-errors':
      // 5xx and 429 of a gateway in front of the API: HTML or plain text, not the API's JSON.
      return {
        serverErrorRate: random.between(0.2, 0.4),
        rateLimitRate: random.between(0.05, 0.2),
        errorBody: random.pick(GATEWAY_ERRORS),
        singleCallFailures: [
          { rate: 0.3, attempts: 2, answer: HTML_503 },
          { rate: 0.1, attempts: 1, answer: { status: 200, body: 'OK', contentType: 'text/plain' } },
        ],
      };
    case 'api-cursor-rejected':
      // Expired cursors, answered with a status and body no configuration names.
      return {
        cursorTtlMs: random.int(1, 200),
        cursorRejection: random.pick(CURSOR_REFUSALS),
        cursorRejectionRate: random.between(0.2, 0.5),
      };
    case 'api-token-expiry':
      return { accessTokenEarlyExpiryRate: random.between(0.02, 0.08) };
    case 'api-single-call-failures':
      return {
        singleCallFailures: [
          { rate: random.between(0.1, 0.3), attempts: random.int(1, 3), answer: HTML_503 },
          // A per-call refusal: published unenriched, the number redacted (never lost).
          {
            rate: 0.03,
            attempts: 0,
            answer: { status: 404, body: '{"error":"gone"}', contentType: 'application/json' },
          },
        ],
      };
    case 'api-single-call-newer-version':
      return { singleCallVersionSkewRate: random.between(0.05, 0.2) };
    default:
      return {};
  }
}

/** JSON.stringify replacer for event lines: rates to two decimals, long bodies cut. */
function brief(_key: string, value: unknown): unknown {
  if (typeof value === 'number' && !Number.isInteger(value)) return Number(value.toFixed(2));
  if (typeof value === 'string' && value.length > 40) return `${value.slice(0, 37)}...`;
  return value;
}

/** One window of the fault's sandbox settings (drawn from its seed), then the background rate again. */
export async function apiFaultWindow(
  fault: PlannedFault,
  random: Random,
  context: ApiFaultContext,
): Promise<FaultResult> {
  const settings = apiFaultSettings(fault.kind, random);
  await context.admin.call('PUT', 'faults', settings);
  await sleep(fault.durationMs);
  await context.admin.call('PUT', 'faults', { ...NO_FAULTS, ...backgroundFaults(context.seed) });
  return {
    end: Date.now(),
    detail: `${(fault.durationMs / 1000).toFixed(1)} s of ${JSON.stringify(settings, brief)}`,
  };
}

/**
 * The quota of grant `second` spent (429 quota_exhausted, Retry-After 15 min) for the fault's duration while
 * grant `default` goes on. It begins once the connector polls at its interval again (intervalRecovered). The
 * other grant's locations must stay fresh meanwhile (each with a change announced by a delivery taken at least
 * FRESH_LEAD_MS before the end committed a page: its nudge made it due at once), and the held grant must resume
 * after (one of its locations announced during the hold commits a page within RESUME_CAP_MS of its end).
 */
export async function grantQuotaSpent(
  fault: PlannedFault,
  _random: Random,
  context: ApiFaultContext,
): Promise<FaultResult> {
  const { admin, offsetReading, report } = context;
  const held = context.grantLocations.second;
  const free = context.grantLocations.default;
  // The check assumes the connector polls at its interval when the hold begins; a fault before this one (a hidden
  // limit) may have left it stretched, and its learned rate low, for a while. Wait for it (bounded), and give
  // the gauge's interval in the report.
  const recovery = await intervalRecovered(context.fleet);
  const before = await offsetReading();
  const from = Date.now();
  await admin.call('PUT', 'faults', {
    grantQuotaSpent: { locations: held, retryAfterSeconds: QUOTA_RETRY_AFTER_SECONDS },
  });
  const refusedBefore = await quotaRefusals(admin);
  await sleep(fault.durationMs);
  const during = await offsetReading();
  await admin.call('PUT', 'faults', { grantQuotaSpent: null });
  const end = Date.now();
  const refused = (await quotaRefusals(admin)) - refusedBefore;
  const changedAt = context.announcedAt();
  const window = { from, until: end, leadMs: FRESH_LEAD_MS };
  const stale = staleLocations(before, during, free, changedAt, window);
  const expected = staleLocations(before, before, free, changedAt, window).length;
  // The held grant's locations changed during the hold: once the quota is back the grant must resume (a
  // page of one of them committed); that every one of them catches up is the settle's check.
  const waiting = staleLocations(before, before, held, changedAt, window);
  let resumedMs: number | null = null;
  let notResumed = waiting;
  if (waiting.length > 0) {
    await until(
      async () => {
        notResumed = staleLocations(during, await offsetReading(), waiting, changedAt, window);
        return notResumed.length < waiting.length;
      },
      RESUME_CAP_MS,
      1000,
    );
    if (notResumed.length < waiting.length) resumedMs = Date.now() - end;
  }
  const text =
    (recovery.waitedMs > 0
      ? `began after the poll interval came back to ${(recovery.intervalMs / 1000).toFixed(1)} s (waited ${(recovery.waitedMs / 1000).toFixed(1)} s); `
      : '') +
    `grant "second" (${held.length} locations) held ${(fault.durationMs / 1000).toFixed(0)} s (${refused} requests refused quota_exhausted, Retry-After ${QUOTA_RETRY_AFTER_SECONDS} s); ` +
    `grant "default": ${expected - stale.length} of ${expected} locations with a live change advanced during the hold` +
    (stale.length > 0 ? ` (STALE: ${stale.slice(0, 3).join(', ')})` : '') +
    `; the held grant ${waiting.length === 0 ? 'had no change to resume' : resumedMs === null ? `did NOT resume (${notResumed.length} of ${waiting.length} locations)` : `resumed ${(resumedMs / 1000).toFixed(1)} s after the hold (${waiting.length - notResumed.length} of ${waiting.length} locations changed meanwhile committed by then)`}`;
  report.faultCheck(`grant quota spent: ${text}`);
  if (stale.length > 0 || (waiting.length > 0 && resumedMs === null) || refused === 0)
    report.violation(`api-grant-quota-spent: ${text}`);
  return { end, detail: text };
}

/**
 * A hidden limit (no header says it) at half of what the live polls alone need, for the fault's duration.
 * History must not starve: the rate limiters must grant history's requests starts during the window whenever a
 * history lane open at its start has not moved by its end (fault-checks.ts historyStarved: a page costs more
 * requests than history's share buys in the window, so moving is not required). The limit must have refused
 * requests (or it proved nothing); how far the connector stretched its poll interval is reported.
 */
export async function hiddenLimitBelowLiveDemand(
  fault: PlannedFault,
  _random: Random,
  context: ApiFaultContext,
): Promise<FaultResult> {
  const { admin, locations, offsetReading, report } = context;
  const rps = limitBelowLiveDemand(locations.length, LIVE_DEMAND_INTERVAL_MS);
  const before = await offsetReading();
  const refusedBefore = await rateRefusals(admin);
  const startsBefore = await grantedStarts(context.fleet);
  await admin.call('PUT', 'faults', { rateLimit: { requestsPerSecond: rps, burst: rps } });
  await sleep(fault.durationMs);
  const stretched = await effectiveIntervalSeconds(context.fleet);
  const after = await offsetReading();
  const startsAfter = await grantedStarts(context.fleet);
  await admin.call('PUT', 'faults', { rateLimit: null });
  const refused = (await rateRefusals(admin)) - refusedBefore;
  const history = {
    progress: historyProgress(before, after),
    backfillStarts: Math.max(0, startsAfter.backfill - startsBefore.backfill),
    allStarts: Math.max(0, startsAfter.all - startsBefore.all),
  };
  const { open, advanced: moved, stuck } = history.progress;
  const text =
    `${rps} requests/s (the live polls alone need ${locations.length / (LIVE_DEMAND_INTERVAL_MS / 1000)}/s) for ${(fault.durationMs / 1000).toFixed(0)} s, ${refused} requests refused 429; ` +
    (open.length === 0
      ? 'no history lane was open (backfill done)'
      : `history lanes advanced: ${moved.length} of ${open.length}${stuck.length > 0 ? ` (not yet: ${stuck.slice(0, 3).join(', ')})` : ''}`) +
    `; request starts granted to history: ${history.backfillStarts} of ${history.allStarts}` +
    `; effective poll interval at the end ${stretched === null ? 'not read' : `${stretched.toFixed(1)} s (configured ${POLL_INTERVAL_MS / 1000} s)`}`;
  report.faultCheck(`limit below live demand: ${text}`);
  // A limit that refused nothing was not below the demand: the fault did not happen.
  if (historyStarved(history) || refused === 0) report.violation(`api-limit-below-live-demand: ${text}`);
  return { end: Date.now(), detail: text, budgetIntervalMs: budgetIntervalMs(locations.length, rps) };
}

/** The header forms of `api-limit-reset-forms`, one sub-window each: the sandbox settings and their name. */
const RESET_FORMS = [
  { name: 'X-RateLimit-Reset in delta seconds', headers: 'x-ratelimit', resetForm: 'delta-seconds' },
  { name: 'X-RateLimit-Reset in epoch seconds', headers: 'x-ratelimit', resetForm: 'epoch-seconds' },
  { name: 'X-RateLimit-Reset in epoch milliseconds', headers: 'x-ratelimit', resetForm: 'epoch-ms' },
  { name: 'Retry-After as an HTTP-date', headers: false, retryAfterForm: 'http-date' },
] as const;

/**
 * Issue 39: a hidden limit (the rate is announced nowhere) above what live demand needs within its share
 * (fault-checks.ts limitAboveLiveDemand), with a burst of 2 so that the enrichment's bursts are refused, in four
 * sub-windows whose refusals write their reset in each header form in turn. Nothing is checked here but that
 * the limit refused requests (else the forms were never read); the freshness rule (freshness.ts) holds the live
 * changes made meanwhile to about one interval.
 */
export async function hiddenLimitResetForms(
  fault: PlannedFault,
  _random: Random,
  context: ApiFaultContext,
): Promise<FaultResult> {
  const { admin, locations, report } = context;
  const rps = limitAboveLiveDemand(locations.length, LIVE_DEMAND_INTERVAL_MS, context.changesPerSecond);
  const window = Math.round(fault.durationMs / RESET_FORMS.length);
  const refusals: string[] = [];
  let total = 0;
  for (const form of RESET_FORMS) {
    const before = await rateRefusals(admin);
    await admin.call('PUT', 'faults', {
      rateLimit: {
        requestsPerSecond: rps,
        burst: 2,
        ...(form.headers === false ? {} : { headers: form.headers, resetForm: form.resetForm }),
      },
      retryAfterForm: 'retryAfterForm' in form ? form.retryAfterForm : 'delay-seconds',
    });
    await sleep(window);
    const refused = (await rateRefusals(admin)) - before;
    total += refused;
    refusals.push(`${form.name}: ${refused}`);
  }
  await admin.call('PUT', 'faults', { rateLimit: null, retryAfterForm: 'delay-seconds' });
  const text =
    `${rps} requests/s, burst 2 (live demand ${(locations.length / (LIVE_DEMAND_INTERVAL_MS / 1000) + context.changesPerSecond).toFixed(1)}/s), ` +
    `${(window / 1000).toFixed(1)} s per header form; requests refused 429: ${refusals.join(', ')}`;
  report.faultCheck(`hidden limit, resets in each header form: ${text}`);
  if (total === 0) report.violation(`api-limit-reset-forms: the limit refused nothing (${text})`);
  return { end: Date.now(), detail: text, budgetIntervalMs: budgetIntervalMs(locations.length, rps) };
}

/**
 * Issue 39: a bulk import of `importSize` calls at one instant in one location (sandbox calls/import) while
 * listing cursors expire within a second, for the fault's duration: that location's traversal of the group
 * meets expired cursors and restarts from its watermark, while the others are polled. The freshness rule
 * (freshness.ts) holds every location's changes, the group's included, to the fault's end plus its recovery
 * plus two intervals; here the group's location is reported (advanced by the end, or not).
 */
export async function cursorExpiryInSameInstantGroup(
  fault: PlannedFault,
  random: Random,
  context: ApiFaultContext,
): Promise<FaultResult> {
  const { admin, locations, offsetReading, report } = context;
  const location = random.pick(locations);
  const ttlMs = random.int(300, 1000);
  const before = await offsetReading();
  await admin.call('PUT', 'faults', { cursorTtlMs: ttlMs });
  const madeAt = Date.now();
  const { data: calls } = await admin.call<{ data: TruthCall[] }>('POST', 'calls/import', {
    locationUid: location,
    count: context.importSize,
  });
  context.imported(calls, madeAt);
  await sleep(fault.durationMs);
  const after = await offsetReading();
  await admin.call('PUT', 'faults', { ...NO_FAULTS, ...backgroundFaults(context.seed) });
  const text =
    `${calls.length} calls at one instant (${calls[0]?.updatedAt ?? '?'}) imported into location ${location}, ` +
    `cursors living ${ttlMs} ms, for ${(fault.durationMs / 1000).toFixed(0)} s; ` +
    `its offset ${advanced(before, after, location) ? 'advanced' : 'did NOT advance'} meanwhile`;
  report.faultCheck(`cursor expiry in a same-instant group: ${text}`);
  return { end: Date.now(), detail: text };
}

async function sandboxFaultStats(
  admin: Pick<SandboxAdmin, 'call'>,
): Promise<{ rateLimited: number; quotaExhausted: number }> {
  return (
    await admin.call<{ data: { faults: { rateLimited: number; quotaExhausted: number } } }>('GET', 'stats')
  ).data.faults;
}

/** Requests the sandbox refused quota_exhausted so far. */
async function quotaRefusals(admin: Pick<SandboxAdmin, 'call'>): Promise<number> {
  return (await sandboxFaultStats(admin)).quotaExhausted;
}

/** Requests the sandbox refused 429 for its rate limit (not a spent quota) so far. */
/** How long the grant-quota fault waits at most for the connector's interval to come back from a stretch. */
const RECOVERY_CAP_MS = 60_000;

/**
 * Waits (at most RECOVERY_CAP_MS) until the running instances report an effective poll interval within 1.5× the
 * configured one; returns the interval they report then (the configured one when none answered) and how long it
 * waited.
 */
async function intervalRecovered(
  fleet: ApiFaultContext['fleet'],
): Promise<{ intervalMs: number; waitedMs: number }> {
  const start = Date.now();
  let seconds = await effectiveIntervalSeconds(fleet);
  while (
    seconds !== null &&
    seconds * 1000 > 1.5 * POLL_INTERVAL_MS &&
    Date.now() - start < RECOVERY_CAP_MS
  ) {
    await sleep(1000);
    seconds = await effectiveIntervalSeconds(fleet);
  }
  return { intervalMs: seconds === null ? POLL_INTERVAL_MS : seconds * 1000, waitedMs: Date.now() - start };
}

/** Request starts the instances' rate limiters granted so far: to history (backfill) and in all. */
async function grantedStarts(fleet: ApiFaultContext['fleet']): Promise<{ backfill: number; all: number }> {
  const name = 'calls_connector_api_rate_limit_granted_total';
  const [backfill, all] = await Promise.all([
    fleetCounter(fleet, name, { priority: 'backfill' }),
    fleetCounter(fleet, name),
  ]);
  return { backfill, all };
}

async function rateRefusals(admin: Pick<SandboxAdmin, 'call'>): Promise<number> {
  const { rateLimited, quotaExhausted } = await sandboxFaultStats(admin);
  return rateLimited - quotaExhausted;
}

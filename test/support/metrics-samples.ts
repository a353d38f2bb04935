/**
 * Gives every connector metric at least one sample, so an exposition contains each metric's TYPE, HELP
 * and series (what `promtool check metrics` and dashboards need to see). `metricsWithoutSamples` finds
 * any metric this helper forgot, so a metric added to ConnectorMetrics without a sample here fails the
 * promtool test instead of silently escaping it.
 */
import { primeWebhookMetrics } from '../../src/metrics/webhook-metrics.js';
import { ConnectorMetrics } from '../../src/metrics/metrics.js';

export const SAMPLE_LOCATION = '7f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e5f';

export function recordSampleOfEveryMetric(metrics: ConnectorMetrics): void {
  const location = metrics.location(SAMPLE_LOCATION);
  metrics.recordsPublished.inc({ location }, 10);
  metrics.recordsSkipped.inc({ location, reason: 'boundary_dedupe' });
  metrics.recordsSkipped.inc({ location, reason: 'dlq' });
  metrics.recordsRedacted.inc({ location }, 3);
  metrics.heartbeats.inc({ location });
  metrics.deadLetters.inc({ code: 'CALL_UNMAPPABLE' });
  metrics.pagesFetched.inc({ location }, 2);
  metrics.recordsBelowWatermark.inc({ location });
  metrics.apiRequestDuration.observe({ endpoint: 'list', status_class: '2xx' }, 0.12);
  metrics.apiRequestDuration.observe({ endpoint: 'get_call', status_class: '5xx' }, 0.4);
  metrics.apiRetries.inc({ endpoint: 'list', reason: '5xx' });
  metrics.apiRateLimited.inc({ endpoint: 'list' });
  metrics.apiRateLimitRefusals.inc({ scope: 'default' });
  metrics.apiRateLimitGranted.inc({ scope: 'default', priority: 'backfill' });
  metrics.configurationInfo.set('0123456789abcdef');
  metrics.configurationReloads.inc({ result: 'applied' });
  metrics.configurationPeers.set({
    state: 'agreed',
    peers: [{ fingerprint: '0123456789abcdef', instances: ['host:1@2026-01-01T00:00:00.000Z'] }],
  });
  metrics.signalOutcomes.inc({ kind: 'pause', state: 'done' });
  // The rate-limit gauges and the held-time counter are read from the limiters at scrape time.
  metrics.setRateLimitSource(() => [
    { scope: 'default', ratePerSecond: 20, heldSeconds: 1.5, throttled: false },
  ]);
  metrics.apiInFlight.set(2);
  metrics.tokenRefreshes.inc({ grant: 'default', result: 'success' });
  metrics.tokenExpiry.set({ grant: 'default' }, Date.now() / 1000 + 36_000);
  metrics.grantValid.set({ grant: 'default' }, 1);
  metrics.transactions.inc({ result: 'commit' }, 2);
  metrics.transactions.inc({ result: 'abort' });
  metrics.transactionCommitDuration.observe(0.02);
  metrics.apiRateLimiterWait.observe({ endpoint: 'list' }, 0.3);
  metrics.readinessCheck.set({ check: 'kafka' }, 1);
  metrics.producerRecreated.inc({ code: 'INVALID_PRODUCER_EPOCH' });
  metrics.standby.set(0);
  metrics.instanceWriter.set(1);
  metrics.webhookDeliveries.inc({ outcome: 'accepted' });
  metrics.webhookNudges.inc({ resolution: 'payload_location' });
  metrics.observeHighWater(SAMPLE_LOCATION, Date.now() - 30_000);
  metrics.observeTraversalSuccess(SAMPLE_LOCATION);
  // Freshness: a live poll that began 3 s ago completed; two changes committed, one from the backfill.
  metrics.observeCaughtUp(SAMPLE_LOCATION, Date.now() - 3_000);
  metrics.observeCommittedChanges('live', [Date.now() - 1_500]);
  metrics.observeCommittedChanges('history', [Date.now() - 86_400_000]);
  metrics.freshnessObjective.set(120);
  metrics.traversalDuration.observe(4.2);
  metrics.locationErrors.inc({ location, code: 'CURSOR_LOOP' });
  metrics.locationsStopped.set({ code: 'API_FORBIDDEN' }, 0);
  metrics.pollInterval.set(60);
  // Self-healing of the traversal and enrichment (issue 9).
  metrics.cursorRestarts.inc({ location, reason: 'rejected_4xx' });
  metrics.recordsUnenriched.inc({ location, reason: 'refused' });
  // A split location's backfill (issue 23): its gauges are set at scrape time from these figures.
  metrics.backfillRecords.inc({ location }, 5);
  metrics.observeBackfill(SAMPLE_LOCATION, {
    untilMs: Date.now() - 60_000,
    positionMs: Date.now() - 3_600_000,
    startedAtMs: Date.now() - 10_000,
    startPositionMs: Date.now() - 7_200_000,
    records: 5,
  });
  // The webhook receiver's series (webhooks.enabled), as its start primes them, and one timed nudge.
  primeWebhookMetrics(metrics);
  metrics.webhookNudgeToPublished.observe(0.4);
}

/** Names of metrics whose exposition has a TYPE line but no sample line. */
export function metricsWithoutSamples(exposition: string): string[] {
  const typed = [...exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => m[1] ?? '');
  const sampled = new Set(
    exposition
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#'))
      .map((line) => /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0] ?? ''),
  );
  return typed.filter(
    (name) => !['', '_bucket', '_sum', '_count', '_total'].some((suffix) => sampled.has(name + suffix)),
  );
}

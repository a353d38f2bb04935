/**
 * The process as a whole: build information, the poll settings the alerts judge staleness against, the
 * readiness checks, and Node's own process metrics.
 */
import { Gauge, collectDefaultMetrics, type Registry } from 'prom-client';

/**
 * prom-client's default metrics include three gauges named `*_total`, which breaks the Prometheus rule
 * that only counters end in `_total` (promtool flags them). Their values are the sums of the
 * per-type gauges without the suffix (`nodejs_active_handles{type}` etc.), so nothing is lost.
 */
const MISNAMED_DEFAULT_METRICS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/** What the shortest round of polls is computed from, at scrape time. */
export interface PollRoundSource {
  /** api.requestsPerSecond; undefined: the gauge stays 0 (tests). */
  requestsPerSecond: () => number | undefined;
  /** The owned locations gauge (ownership-metrics.ts), which follows a distributed instance's assignment. */
  ownedLocations: Pick<Gauge, 'get'>;
}

export function processMetrics(registry: Registry, poll: PollRoundSource) {
  const registers = [registry];
  return {
    pollInterval: new Gauge({
      name: 'calls_connector_poll_interval_seconds',
      help: 'Configured pause between traversals of a location (poll.intervalMs); alerts judge staleness against it.',
      registers,
    }),
    pollEffectiveInterval: new Gauge({
      name: 'calls_connector_poll_effective_interval_seconds',
      help: 'Interval at which the scheduler polls each location now: poll.intervalMs, stretched evenly when the live polls alone would exceed the API budget or the workers (see docs/runbook.md). Above calls_connector_poll_interval_seconds, locations are polled that much less often.',
      registers,
    }),
    /**
     * Computed at scrape time from the owned locations, so that it follows a distributed instance's assignment.
     * Stays 0 without api.requestsPerSecond (tests).
     */
    pollRound: new Gauge({
      name: 'calls_connector_poll_round_seconds',
      help: 'Shortest time one round of polls of the locations this instance owns can take under api.requestsPerSecond (owned locations / rate). Above calls_connector_poll_interval_seconds, each location is polled once per round, not once per interval; the staleness alert judges against the larger of the two.',
      registers,
      async collect() {
        const rate = poll.requestsPerSecond();
        if (rate === undefined) return;
        const owned = (await poll.ownedLocations.get()).values[0]?.value ?? 0;
        this.set(owned / rate);
      },
    }),
    buildInfo: new Gauge({
      name: 'calls_connector_build_info',
      help: 'Always 1; labels carry the connector version and its configured name.',
      labelNames: ['version', 'connector'] as const,
      registers,
    }),
    readinessCheck: new Gauge({
      name: 'calls_connector_readiness_check',
      help: '1 when a readiness check passed at its last evaluation (/readyz), 0 when it failed; by check name.',
      labelNames: ['check'] as const,
      registers,
    }),
  };
}

/**
 * Node's process metrics (heap, event loop lag, GC, fds), without a prefix: the stock Node.js dashboards and
 * alerts query process_* and nodejs_* by their usual names.
 */
export function collectNodeProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
  for (const name of MISNAMED_DEFAULT_METRICS) registry.removeSingleMetric(name);
}

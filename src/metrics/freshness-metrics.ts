/**
 * Freshness, the promise users buy the connector for ("a change made now is in Kafka within one poll
 * interval"), as figures: how long each committed change waited, from its `updatedAt` to the commit of the
 * page that published it, per lane; and the objective the alert holds its 99th percentile to. Each location's
 * lag (what waits now) is a scrape-time gauge of location-progress.ts.
 */
import { Gauge, Histogram, type Registry } from 'prom-client';

/**
 * Buckets from 0.1 s (a nudged poll) to an hour (a stretched interval, a long hold), dense around the
 * intervals a deployment polls at (1 s to 15 min), so that `histogram_quantile(0.99, ...)` is read within a
 * bucket's width of the truth where an objective is usually set.
 */
export const COMMIT_DELAY_BUCKETS = [
  0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 900, 1800, 3600,
] as const;

export function freshnessMetrics(registry: Registry) {
  const registers = [registry];
  return {
    changeCommitDelay: new Histogram({
      name: 'calls_connector_change_commit_delay_seconds',
      help: "Delay from a published change's updatedAt to the commit of its page, per lane: live (the present, polled and nudged) or history (a split location's backfill, old by nature). Observed once the page is stored (a committed transaction), never for an aborted one.",
      labelNames: ['lane'] as const,
      buckets: [...COMMIT_DELAY_BUCKETS],
      registers,
    }),
    freshnessObjective: new Gauge({
      name: 'calls_connector_freshness_objective_seconds',
      help: "metrics.freshnessObjectiveMs in seconds: the 99th percentile of the live lane's change_commit_delay_seconds the alert CallsConnectorFreshnessObjectiveMissed holds the connector to.",
      registers,
    }),
  };
}

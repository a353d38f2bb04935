/**
 * Every Prometheus metric the connector exposes, defined once (prom-client).
 *
 * Naming follows Prometheus conventions: `calls_connector_` prefix, base units (seconds, bytes),
 * `_total` on counters. Label values are bounded: endpoint names, status classes, result words,
 * reasons, error codes. The only unbounded label is `location`, and it can be turned off
 * (`metrics.perLocationLabels: false`), in which case it is always the value "all".
 *
 * Contract: one `ConnectorMetrics` per process (or per test), each with its own Registry, so tests
 * never share counters. Components receive it injected; none of them creates metrics of its own.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface MetricsOptions {
  perLocationLabels?: boolean;
  /** Node process metrics (heap, event loop lag, GC, fds); off in unit tests to keep them quiet. */
  processMetrics?: boolean;
}

export type StatusClass = '2xx' | '3xx' | '4xx' | '5xx' | 'error';

export function statusClass(status: number | undefined): StatusClass {
  if (status === undefined || status < 200 || status >= 600) return 'error';
  return `${Math.floor(status / 100)}xx` as StatusClass;
}

export class ConnectorMetrics {
  readonly registry = new Registry();
  readonly perLocationLabels: boolean;

  readonly recordsPublished = new Counter({
    name: 'calls_connector_records_published_total',
    help: 'Call records committed to the calls topic.',
    labelNames: ['location'] as const,
    registers: [this.registry],
  });
  readonly recordsSkipped = new Counter({
    name: 'calls_connector_records_skipped_total',
    help: 'Listed calls not published as-is, by reason: boundary_dedupe (already published at the since boundary), dlq (sent to the dead-letter topic), redacted (published with customerPhoneNumber removed).',
    labelNames: ['location', 'reason'] as const,
    registers: [this.registry],
  });
  readonly deadLetters = new Counter({
    name: 'calls_connector_dead_letters_total',
    help: 'Items written to the dead-letter topic, by error code.',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });
  readonly pagesFetched = new Counter({
    name: 'calls_connector_pages_fetched_total',
    help: 'Listing pages fetched.',
    labelNames: ['location'] as const,
    registers: [this.registry],
  });
  readonly apiRequestDuration = new Histogram({
    name: 'calls_connector_api_request_duration_seconds',
    help: 'Calls API request duration, by endpoint (list, get_call, token) and status class.',
    labelNames: ['endpoint', 'status_class'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly apiRetries = new Counter({
    name: 'calls_connector_api_retries_total',
    help: 'Calls API requests retried, by endpoint and reason (status code class, network, timeout).',
    labelNames: ['endpoint', 'reason'] as const,
    registers: [this.registry],
  });
  readonly apiRateLimited = new Counter({
    name: 'calls_connector_api_rate_limited_total',
    help: 'HTTP 429 responses from the calls API.',
    labelNames: ['endpoint'] as const,
    registers: [this.registry],
  });
  readonly apiInFlight = new Gauge({
    name: 'calls_connector_api_requests_in_flight',
    help: 'Calls API requests currently in flight.',
    registers: [this.registry],
  });
  readonly tokenRefreshes = new Counter({
    name: 'calls_connector_token_refreshes_total',
    help: 'OAuth token refreshes, by result (success, failure, revoked).',
    labelNames: ['grant', 'result'] as const,
    registers: [this.registry],
  });
  readonly tokenExpiry = new Gauge({
    name: 'calls_connector_token_expiry_timestamp_seconds',
    help: 'Unix time at which the current access token of a grant expires.',
    labelNames: ['grant'] as const,
    registers: [this.registry],
  });
  readonly grantValid = new Gauge({
    name: 'calls_connector_grant_valid',
    help: '1 while a grant can obtain tokens, 0 once its refresh was refused (run `auth login` again).',
    labelNames: ['grant'] as const,
    registers: [this.registry],
  });
  readonly transactions = new Counter({
    name: 'calls_connector_kafka_transactions_total',
    help: 'Kafka transactions, by result (commit, abort).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly producerRecreated = new Counter({
    name: 'calls_connector_kafka_producer_recreated_total',
    help: 'Producers discarded and rebuilt after a fenced or stuck transaction, by error code.',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });
  readonly freshness = new Gauge({
    name: 'calls_connector_location_freshness_seconds',
    help: 'Now minus the highest updatedAt published for a location (its high-water mark).',
    labelNames: ['location'] as const,
    registers: [this.registry],
  });
  readonly lastTraversalSuccess = new Gauge({
    name: 'calls_connector_location_last_success_timestamp_seconds',
    help: 'Unix time at which a location last completed a traversal (nextCursor exhausted).',
    labelNames: ['location'] as const,
    registers: [this.registry],
  });
  readonly traversalDuration = new Histogram({
    name: 'calls_connector_traversal_duration_seconds',
    help: 'Duration of one complete traversal of a location, first page to null nextCursor.',
    buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600],
    registers: [this.registry],
  });
  readonly locationErrors = new Counter({
    name: 'calls_connector_location_errors_total',
    help: 'Traversals that ended in an error, by error code.',
    labelNames: ['location', 'code'] as const,
    registers: [this.registry],
  });
  readonly locationsStopped = new Gauge({
    name: 'calls_connector_locations_stopped',
    help: 'Locations stopped by a fatal error (loop, revoked grant, malformed pages) and waiting for a person.',
    registers: [this.registry],
  });

  constructor(options: MetricsOptions = {}) {
    this.perLocationLabels = options.perLocationLabels ?? true;
    if (options.processMetrics ?? false)
      collectDefaultMetrics({ register: this.registry, prefix: 'calls_connector_' });
  }

  /** The `location` label value for a location uid, honouring `perLocationLabels`. */
  location(locationUid: string): string {
    return this.perLocationLabels ? locationUid : 'all';
  }
}

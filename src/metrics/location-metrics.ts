/**
 * What the sync of each location did: records published, skipped, redacted or left unenriched, pages, traversals,
 * errors and stopped locations, traversals restarted. Counted as it happens; the progress gauges computed at
 * scrape time are in location-progress.ts.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export function locationMetrics(registry: Registry) {
  const registers = [registry];
  return {
    recordsPublished: new Counter({
      name: 'calls_connector_records_published_total',
      help: 'Call records committed to the calls topic.',
      labelNames: ['location'] as const,
      registers,
    }),
    recordsSkipped: new Counter({
      name: 'calls_connector_records_skipped_total',
      help: 'Listed calls not published, by reason: boundary_dedupe (already published at the since boundary), dlq (sent to the dead-letter topic). Redacted records are published: see records_redacted_total.',
      labelNames: ['location', 'reason'] as const,
      registers,
    }),
    recordsBelowWatermark: new Counter({
      name: 'calls_connector_records_below_watermark_total',
      help: "Listed records older than their location's watermark (the API broke its updatedAt order): published again rather than risk losing them.",
      labelNames: ['location'] as const,
      registers,
    }),
    recordsRedacted: new Counter({
      name: 'calls_connector_records_redacted_total',
      help: 'Call records published with customerPhoneNumber removed by the privacy policy (they are in the calls topic).',
      labelNames: ['location'] as const,
      registers,
    }),
    pagesFetched: new Counter({
      name: 'calls_connector_pages_fetched_total',
      help: 'Listing pages fetched.',
      labelNames: ['location'] as const,
      registers,
    }),
    traversalDuration: new Histogram({
      name: 'calls_connector_traversal_duration_seconds',
      help: 'Duration of one complete traversal of a location, first page to null nextCursor.',
      buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600],
      registers,
    }),
    locationErrors: new Counter({
      name: 'calls_connector_location_errors_total',
      help: 'Traversals that ended in an error, by error code.',
      labelNames: ['location', 'code'] as const,
      registers,
    }),
    locationsStopped: new Gauge({
      name: 'calls_connector_locations_stopped',
      help: 'Locations stopped by a fatal error (403, cursor loop, revoked grant, ...), by error code; retried with backoff until a page succeeds (see docs/sync.md).',
      labelNames: ['code'] as const,
      registers,
    }),
    // Self-healing of the traversal and enrichment: rejected cursors, unenriched calls.
    cursorRestarts: new Counter({
      name: 'calls_connector_cursor_restarts_total',
      help: 'Traversals restarted from the watermark because the listing rejected the cursor sent, by reason: invalid_cursor (named by api.invalidCursorStatuses / api.invalidCursorErrorCodes), rejected_4xx (any other 4xx but 401/403/429).',
      labelNames: ['location', 'reason'] as const,
      registers,
    }),
    recordsUnenriched: new Counter({
      name: 'calls_connector_records_unenriched_total',
      help: 'Calls published without enrichment (customer number redacted) although enrichment is on, by reason: gone (404/410), refused (another 4xx), invalid (fields the schema rejects, or a body over api.maxResponseBytes), version_mismatch (the single call has another updatedAt than listed).',
      labelNames: ['location', 'reason'] as const,
      registers,
    }),
  };
}

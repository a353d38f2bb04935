/**
 * The connector's metrics as tests build them: one place that says how a test registry is made (a fresh
 * registry each call, process metrics off unless asked for), so a new constructor option or default is set
 * here once instead of at every `new ConnectorMetrics()`.
 */
import { ConnectorMetrics, type MetricsOptions } from '../../src/metrics/metrics.js';

export function testMetrics(options: MetricsOptions = {}): ConnectorMetrics {
  return new ConnectorMetrics({ processMetrics: false, ...options });
}

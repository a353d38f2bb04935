/** Reads prom-client metrics in tests: a counter's sum, or one sample of any metric by name. */
import type { Counter, Registry } from 'prom-client';

/** Whether a sample's labels include every one of `labels`. */
function matches(sample: { labels: Record<string, unknown> }, labels: Record<string, string>): boolean {
  return Object.entries(labels).every(([k, value]) => sample.labels[k] === value);
}

/** Sum of a counter's series whose labels include `labels` (all series when empty); 0 when none. */
export async function counterValue(counter: Counter, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await counter.get();
  return values.filter((v) => matches(v, labels)).reduce((sum, v) => sum + v.value, 0);
}

/**
 * The first sample of metric `name` (in `metrics.registry`) whose labels include `labels`; undefined when
 * the metric or such a sample does not exist. For gauges and for metrics known by their exposed name.
 */
export async function metricValue(
  metrics: { registry: Registry },
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  const metric = await metrics.registry.getSingleMetric(name)?.get();
  return metric?.values.find((v) => matches(v, labels))?.value;
}

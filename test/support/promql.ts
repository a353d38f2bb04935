/**
 * Finds the metric names a PromQL expression reads, well enough to catch typos in dashboards and alert
 * rules: label matchers, range selectors, strings, label lists of `by (...)`/`on (...)` and function
 * names are removed; every identifier left is a metric name.
 */
import { testMetrics } from './metrics.js';

const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'inf',
  'nan',
]);

export function metricNamesIn(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, ' ') // strings
    .replace(/\{[^}]*\}/g, ' ') // label matchers
    .replace(/\[[^\]]*\]/g, ' ') // range selectors
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ') // label lists
    .replace(/\$\w+/g, ' '); // Grafana variables outside matchers
  const names = new Set<string>();
  for (const match of stripped.matchAll(/(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    const [, identifier, call] = match;
    if (identifier === undefined || call !== undefined || KEYWORDS.has(identifier.toLowerCase())) continue;
    names.add(identifier);
  }
  return [...names];
}

/** Every series name the connector exposes (histograms with their _bucket/_sum/_count), plus Prometheus' `up`. */
export async function exposedSeriesNames(): Promise<Set<string>> {
  const metrics = testMetrics({ processMetrics: true });
  const names = new Set<string>(['up']);
  for (const metric of await metrics.registry.getMetricsAsJSON()) {
    names.add(metric.name);
    if (String(metric.type) === 'histogram') {
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(metric.name + suffix);
    }
  }
  return names;
}

/** The base metric of a series name (`x_bucket` -> `x` when `x` is a histogram in `names`). */
export function baseMetricName(series: string, names: ReadonlySet<string>): string {
  const base = series.replace(/_(?:bucket|sum|count)$/, '');
  return base !== series && names.has(base) ? base : series;
}

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConnectorMetrics } from '../../../src/metrics/metrics.js';

const doc = readFileSync(new URL('../../../docs/metrics.md', import.meta.url), 'utf8');

describe('docs/metrics.md', () => {
  it('documents every metric the connector defines, with its type', async () => {
    const undocumented: string[] = [];
    for (const metric of await new ConnectorMetrics().registry.getMetricsAsJSON()) {
      const row = doc.split('\n').find((line) => line.startsWith(`| \`${metric.name}\``));
      if (row === undefined || !row.includes(`| ${String(metric.type)}`)) undocumented.push(metric.name);
    }
    expect(undocumented).toEqual([]);
  });

  it('documents every alert rule', () => {
    const alerts = [
      ...readFileSync(new URL('../../../config/prometheus/alerts.yml', import.meta.url), 'utf8').matchAll(
        /alert: (\w+)/g,
      ),
    ].map((m) => m[1] ?? '');
    expect(alerts.length).toBeGreaterThan(0);
    expect(alerts.filter((name) => !doc.includes(`\`${name}\``))).toEqual([]);
  });
});

/**
 * The exposition and the alert rules, checked by Prometheus' own tool. promtool must be installed
 * (Debian package `prometheus`): these tests fail, never skip, without it.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConnectorMetrics } from '../../../src/metrics/metrics.js';
import { metricsWithoutSamples, recordSampleOfEveryMetric } from '../../support/metrics-samples.js';
import { promtool } from '../../support/promtool.js';

const alertsFile = fileURLToPath(new URL('../../../config/prometheus/alerts.yml', import.meta.url));
const alertTestsFile = fileURLToPath(new URL('../../../config/prometheus/alerts.test.yml', import.meta.url));
const prometheusConfigFile = fileURLToPath(
  new URL('../../../config/prometheus/prometheus.yml', import.meta.url),
);

describe('promtool', () => {
  it('finds no problem in an exposition where every connector metric has a sample, process metrics included', async () => {
    const connectorOnly = new ConnectorMetrics();
    recordSampleOfEveryMetric(connectorOnly);
    expect(metricsWithoutSamples(await connectorOnly.registry.metrics())).toEqual([]);

    // Process metrics sample what the runtime has (GC runs, active requests), so some may be empty here.
    const metrics = new ConnectorMetrics({ processMetrics: true, version: '0.1.0', connector: 'test' });
    recordSampleOfEveryMetric(metrics);
    const exposition = await metrics.registry.metrics();
    const result = promtool(['check', 'metrics'], exposition);
    expect(result.output).toBe('');
    expect(result.status).toBe(0);
  });

  it('finds no problem in the exposition with per-location labels turned off', async () => {
    const metrics = new ConnectorMetrics({ perLocationLabels: false });
    recordSampleOfEveryMetric(metrics);
    const result = promtool(['check', 'metrics'], await metrics.registry.metrics());
    expect(result.output).toBe('');
    expect(result.status).toBe(0);
  });

  it('accepts the alert rules', () => {
    const result = promtool(['check', 'rules', alertsFile]);
    expect(result.output).toMatch(/SUCCESS: \d+ rules found/);
    expect(result.status).toBe(0);
  });

  it('fires each alert exactly when its unit tests say it should', () => {
    const result = promtool(['test', 'rules', alertTestsFile]);
    expect(result.output).toContain('SUCCESS');
    expect(result.status).toBe(0);
  });

  it('accepts the compose Prometheus configuration and the rule file it loads', () => {
    const result = promtool(['check', 'config', prometheusConfigFile]);
    expect(result.output).toContain('is valid prometheus config file syntax');
    expect(result.status).toBe(0);
  });
});

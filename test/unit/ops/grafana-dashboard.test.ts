import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { testMetrics } from '../../support/metrics.js';
import { recordSampleOfEveryMetric } from '../../support/metrics-samples.js';
import { metricNamesIn } from '../../support/promql.js';

const root = new URL('../../../', import.meta.url);

interface Target {
  expr: string;
  refId: string;
  datasource?: { uid: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { type: string; uid: string };
  targets?: Target[];
}
interface Variable {
  name: string;
  type: string;
  query: unknown;
  multi?: boolean;
  includeAll?: boolean;
  datasource?: { uid: string };
}
interface Dashboard {
  uid: string;
  title: string;
  schemaVersion: number;
  panels: Panel[];
  templating: { list: Variable[] };
}

const dashboard = JSON.parse(
  readFileSync(new URL('config/grafana/calls-connector.json', root), 'utf8'),
) as Dashboard;
const dataPanels = dashboard.panels.filter((p) => p.type !== 'row');

/** Connector metrics that carry a `location` label. */
async function locationLabelledMetrics(): Promise<Set<string>> {
  const metrics = testMetrics();
  recordSampleOfEveryMetric(metrics);
  const names = new Set<string>();
  for (const metric of await metrics.registry.getMetricsAsJSON()) {
    if (metric.values.some((v) => 'location' in v.labels)) names.add(metric.name);
  }
  return names;
}

describe('Grafana dashboard config/grafana/calls-connector.json', () => {
  it('is a Grafana dashboard with a stable uid and a modern schema version', () => {
    expect(dashboard.uid).toBe('calls-connector');
    expect(dashboard.title).toBe('calls-connector');
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(dataPanels.length).toBeGreaterThanOrEqual(20);
  });

  it('lets the viewer pick the Prometheus datasource, the instances and the locations', () => {
    const byName = new Map(dashboard.templating.list.map((v) => [v.name, v]));
    expect(byName.get('datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
    expect(byName.get('instance')).toMatchObject({
      type: 'query',
      multi: true,
      includeAll: true,
      datasource: { uid: '${datasource}' },
    });
    expect(byName.get('location')).toMatchObject({
      type: 'query',
      multi: true,
      includeAll: true,
      datasource: { uid: '${datasource}' },
    });
  });

  it('queries every panel and target through the datasource variable', () => {
    for (const panel of dataPanels) {
      expect(panel.datasource, panel.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) {
        expect(target.datasource?.uid, panel.title).toBe('${datasource}');
        expect(target.expr.trim(), panel.title).not.toBe('');
      }
    }
  });

  it('gives panels unique ids, unique refIds within a panel and a layout without overlaps inside the 24-column grid', () => {
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const panel of dataPanels) {
      const refIds = (panel.targets ?? []).map((t) => t.refId);
      expect(new Set(refIds).size, panel.title).toBe(refIds.length);
    }
    const boxes = dashboard.panels.map((p) => ({ title: p.title, ...p.gridPos }));
    for (const box of boxes) expect(box.x + box.w, box.title).toBeLessThanOrEqual(24);
    for (const [i, a] of boxes.entries()) {
      for (const b of boxes.slice(i + 1)) {
        const overlap = a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
        expect(overlap, `${a.title} overlaps ${b.title}`).toBe(false);
      }
    }
  });

  it('filters every per-location series by the $location variable and every series by $instance', async () => {
    const perLocation = await locationLabelledMetrics();
    for (const panel of dataPanels) {
      for (const { expr } of panel.targets ?? []) {
        const names = metricNamesIn(expr).map((n) => n.replace(/_(bucket|sum|count)$/, ''));
        if (names.some((n) => perLocation.has(n)))
          expect(expr, panel.title).toContain('location=~"$location"');
        expect(expr, panel.title).toContain('instance=~"$instance"');
      }
    }
  });

  it('is provisioned with a Prometheus datasource and a file dashboard provider', () => {
    const datasources = parse(
      readFileSync(new URL('config/grafana/provisioning/datasources/prometheus.yml', root), 'utf8'),
    ) as { datasources: { type: string; url: string; isDefault: boolean }[] };
    expect(datasources.datasources).toEqual([
      expect.objectContaining({ type: 'prometheus', url: 'http://prometheus:9090', isDefault: true }),
    ]);
    const providers = parse(
      readFileSync(new URL('config/grafana/provisioning/dashboards/calls-connector.yml', root), 'utf8'),
    ) as { providers: { type: string; options: { path: string } }[] };
    expect(providers.providers[0]).toMatchObject({
      type: 'file',
      options: { path: '/var/lib/grafana/dashboards' },
    });
  });
});

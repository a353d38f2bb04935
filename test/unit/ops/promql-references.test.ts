/**
 * Every metric the dashboard and the alert rules query must be one the connector exposes: a typo in a
 * PromQL expression would otherwise give an empty panel or an alert that can never fire.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { testMetrics } from '../../support/metrics.js';
import { baseMetricName, exposedSeriesNames, metricNamesIn } from '../../support/promql.js';

const root = new URL('../../../', import.meta.url);

interface Dashboard {
  panels: { title: string; targets?: { expr: string }[] }[];
  templating: { list: { name: string; definition?: string }[] };
}
interface RuleFile {
  groups: { rules: { alert?: string; record?: string; expr: string }[] }[];
}

function dashboardExpressions(): { where: string; expr: string }[] {
  const dashboard = JSON.parse(
    readFileSync(new URL('config/grafana/calls-connector.json', root), 'utf8'),
  ) as Dashboard;
  const panels = dashboard.panels.flatMap((p) =>
    (p.targets ?? []).map((t) => ({ where: `panel "${p.title}"`, expr: t.expr })),
  );
  const variables = dashboard.templating.list
    .filter((v) => v.definition !== undefined)
    .map((v) => ({
      where: `variable $${v.name}`,
      expr: (v.definition ?? '').replace(/^label_values\((.*),\s*\w+\)$/, '$1'),
    }));
  return [...panels, ...variables];
}

function alertExpressions(): { where: string; expr: string }[] {
  const rules = parse(readFileSync(new URL('config/prometheus/alerts.yml', root), 'utf8')) as RuleFile;
  return rules.groups.flatMap((g) =>
    g.rules.map((r) => ({ where: `alert ${r.alert ?? r.record}`, expr: r.expr })),
  );
}

describe('PromQL metric references', () => {
  it('finds metric names and ignores functions, label lists, matchers and keywords', () => {
    expect(
      metricNamesIn(
        'histogram_quantile(0.95, sum by (le, endpoint) (rate(a_bucket{status_class=~"5xx|error", instance=~"$instance"}[$__rate_interval]))) > on (job) group_left () b and time() - c',
      ).sort(),
    ).toEqual(['a_bucket', 'b', 'c']);
  });

  it('uses only metrics the connector exposes in the dashboard', async () => {
    const known = await exposedSeriesNames();
    const unknown = dashboardExpressions().flatMap(({ where, expr }) =>
      metricNamesIn(expr)
        .filter((name) => !known.has(name))
        .map((name) => `${where}: ${name}`),
    );
    expect(unknown).toEqual([]);
  });

  it('uses only metrics the connector exposes in the alert rules', async () => {
    const known = await exposedSeriesNames();
    const unknown = alertExpressions().flatMap(({ where, expr }) =>
      metricNamesIn(expr)
        .filter((name) => !known.has(name))
        .map((name) => `${where}: ${name}`),
    );
    expect(unknown).toEqual([]);
  });

  it('shows every connector metric somewhere on the dashboard', async () => {
    const known = await exposedSeriesNames();
    const used = new Set(
      dashboardExpressions().flatMap(({ expr }) => metricNamesIn(expr).map((n) => baseMetricName(n, known))),
    );
    const connectorMetrics = (await testMetrics().registry.getMetricsAsJSON()).map((m) => m.name);
    expect(connectorMetrics.filter((name) => !used.has(name))).toEqual([]);
  });

  it('matches only label values the connector writes (a renamed value would silence an alert)', () => {
    const sources = readdirSync(new URL('src/', root), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
      .map((entry) => readFileSync(join(entry.parentPath, entry.name), 'utf8'))
      .join('\n');
    const unknown: string[] = [];
    let matchers = 0;
    for (const { where, expr } of [...dashboardExpressions(), ...alertExpressions()]) {
      for (const [, label, value] of expr.matchAll(/\b([a-z_]+)\s*(?:=|!=|=~|!~)\s*"([^"$]*)"/g)) {
        if (label === 'job') continue; // the scrape job's name, from prometheus.yml, not the connector
        matchers += 1;
        for (const alternative of value!.split('|'))
          if (!sources.includes(`'${alternative}'`)) unknown.push(`${where}: ${label}="${alternative}"`);
      }
    }
    expect(matchers).toBeGreaterThan(3);
    expect(unknown).toEqual([]);
  });
});

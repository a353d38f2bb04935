import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { testMetrics } from '../../support/metrics.js';

const root = new URL('../../../', import.meta.url);
const doc = readFileSync(new URL('docs/metrics.md', root), 'utf8');

/** GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to dashes. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\- ]/g, '')
    .replace(/ /g, '-');
}

describe('docs/metrics.md', () => {
  it('documents every metric the connector defines, with its type', async () => {
    const undocumented: string[] = [];
    for (const metric of await testMetrics().registry.getMetricsAsJSON()) {
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

  it('links every alert to an existing runbook section with an absolute runbook_url in this repository', () => {
    const rules = parse(readFileSync(new URL('config/prometheus/alerts.yml', root), 'utf8')) as {
      groups: { rules: { alert: string; annotations: { runbook_url?: string } }[] }[];
    };
    const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as {
      repository: { url: string };
    };
    const base = `${pkg.repository.url.replace(/^git\+/, '').replace(/\.git$/, '')}/blob/main/`;
    const broken: string[] = [];
    for (const rule of rules.groups.flatMap((g) => g.rules)) {
      const url = rule.annotations.runbook_url ?? '';
      const [file = '', anchor = ''] = (url.startsWith(base) ? url.slice(base.length) : '').split('#');
      const target = new URL(file, root);
      const anchors = existsSync(target)
        ? readFileSync(target, 'utf8')
            .split('\n')
            .filter((line) => /^#{1,6} /.test(line))
            .map((line) => anchorOf(line.replace(/^#+ /, '')))
        : [];
      if (anchor === '' || !anchors.includes(anchor)) broken.push(`${rule.alert}: ${url || '(none)'}`);
    }
    expect(broken).toEqual([]);
  });
});

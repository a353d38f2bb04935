/**
 * The Helm chart's copies and its documentation stay in step with their sources (tools/helm/chart-files.ts):
 * the alert rules and the dashboard of config/ (one source of truth: Helm cannot read outside the chart, so the
 * chart carries copies), and the chart README's parameters table, generated from values.schema.json and values.yaml.
 */
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { packageRoot } from '../../../src/package-info.js';
import { HELM_VERSION } from '../../support/helm.js';
import {
  CHART_COPIES,
  CHART_DIR,
  staleChartFiles,
  valuesRows,
  type SchemaNode,
} from '../../../tools/helm/chart-files.js';

const root = packageRoot();
const chartFile = (name: string) => readFileSync(join(root, CHART_DIR, name), 'utf8');

/** Every leaf key of values.yaml, dotted (an empty object or array is a leaf). */
function leafKeys(value: unknown, path: string[] = []): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || Object.keys(value).length === 0)
    return [path.join('.')];
  return Object.entries(value).flatMap(([key, child]) => leafKeys(child, [...path, key]));
}

describe('the Helm chart files', () => {
  it('carry the alert rules and the dashboard of config/, byte for byte', () => {
    for (const { source, copy } of CHART_COPIES)
      expect(
        readFileSync(join(root, copy)).equals(readFileSync(join(root, source))),
        `${copy} = ${source}`,
      ).toBe(true);
  });

  it("are what `npm run chart:sync` writes, the chart README's parameters table included", async () => {
    expect(await staleChartFiles(root)).toEqual([]);
  });

  it('document every key of values.yaml in the parameters table (a free-form object as a whole)', () => {
    const schema = JSON.parse(chartFile('values.schema.json')) as SchemaNode;
    const values = parseYaml(chartFile('values.yaml')) as unknown;
    const documented = new Set(valuesRows(schema, values).map((row) => row.key));
    const undocumented = leafKeys(values).filter(
      (key) => !key.split('.').some((_, i, parts) => documented.has(parts.slice(0, i + 1).join('.'))),
    );
    expect(undocumented).toEqual([]);
  });

  it('fail while the parameters table is stale: a changed description is found', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'calls-chart-files-'));
    cpSync(join(root, CHART_DIR), join(dir, CHART_DIR), { recursive: true, dereference: false });
    for (const { source } of CHART_COPIES) cpSync(join(root, source), join(dir, source));
    cpSync(join(root, '.prettierrc.json'), join(dir, '.prettierrc.json'));
    expect(await staleChartFiles(dir)).toEqual([]);
    const schemaFile = join(dir, CHART_DIR, 'values.schema.json');
    writeFileSync(
      schemaFile,
      readFileSync(schemaFile, 'utf8').replace('Render the chart at all', 'Render it'),
    );
    expect(await staleChartFiles(dir)).toEqual([
      `${CHART_DIR}/README.md's parameters table differs from the chart's values.schema.json and values.yaml`,
    ]);
  });

  it('name one helm version: the one .ci/run builds, the tests and `npm test` ask for', () => {
    const ci = /^HELM_VERSION=(v\S+)$/m.exec(readFileSync(join(root, '.ci/run'), 'utf8'))?.[1];
    const preflight = readFileSync(join(root, 'scripts/preflight.mjs'), 'utf8');
    expect(ci).toBe(HELM_VERSION);
    expect(preflight).toContain(`helm.sh/helm/v3/cmd/helm@${HELM_VERSION}`);
  });
});

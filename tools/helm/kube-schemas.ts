/**
 * Generates the JSON schemas kubeconform validates the chart's objects against (tools/helm/schemas/), strict as
 * an API server is: every object schema refuses a field it does not declare (`additionalProperties: false`, what
 * kubeconform's `-strict` expects of a schema), except where the API itself keeps unknown fields
 * (`x-kubernetes-preserve-unknown-fields`) or takes a map.
 *
 * Sources, both Go modules fetched through the Go module proxy (`go mod download`), nothing else downloaded:
 * - Kubernetes' OpenAPI v3 spec, `api/openapi-spec/v3/` of the module k8s.io/kubernetes at KUBERNETES_VERSION;
 * - the Prometheus Operator's CRDs, `example/prometheus-operator-crd/` of the module
 *   github.com/prometheus-operator/prometheus-operator at PROMETHEUS_OPERATOR_VERSION.
 * Only the kinds the chart renders (KINDS). Each schema is standalone: every `$ref` inlined, descriptions dropped.
 * The file names are kubeconform's `{{ .ResourceKind }}{{ .KindSuffix }}.json` (e.g. deployment-apps-v1.json).
 *
 * Usage: node dist/tools/helm/kube-schemas.js --write   (`npm run chart:schemas`; needs `go` on PATH)
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { packageRoot } from '../../src/package-info.js';

export const KUBERNETES_VERSION = '1.34.4';
export const PROMETHEUS_OPERATOR_VERSION = '0.85.0';
export const SCHEMAS_DIR = 'tools/helm/schemas';

/** The kinds the chart renders: apiVersion, kind, and the OpenAPI v3 file (core) or the CRD file (operator). */
export const KINDS: ReadonlyArray<{ apiVersion: string; kind: string; source: string }> = [
  { apiVersion: 'v1', kind: 'ConfigMap', source: 'api__v1_openapi.json' },
  { apiVersion: 'v1', kind: 'Pod', source: 'api__v1_openapi.json' },
  { apiVersion: 'v1', kind: 'Service', source: 'api__v1_openapi.json' },
  { apiVersion: 'v1', kind: 'ServiceAccount', source: 'api__v1_openapi.json' },
  { apiVersion: 'apps/v1', kind: 'Deployment', source: 'apis__apps__v1_openapi.json' },
  { apiVersion: 'batch/v1', kind: 'Job', source: 'apis__batch__v1_openapi.json' },
  { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', source: 'apis__policy__v1_openapi.json' },
  {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    source: 'apis__networking.k8s.io__v1_openapi.json',
  },
  { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', source: 'apis__networking.k8s.io__v1_openapi.json' },
  {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PodMonitor',
    source: 'monitoring.coreos.com_podmonitors.yaml',
  },
  {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    source: 'monitoring.coreos.com_servicemonitors.yaml',
  },
  {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    source: 'monitoring.coreos.com_prometheusrules.yaml',
  },
];

/** kubeconform's file name of a kind: `{{ .ResourceKind }}{{ .KindSuffix }}.json`. */
export function schemaFileName(apiVersion: string, kind: string): string {
  const [groupOrVersion = '', version] = apiVersion.split('/');
  const suffix = version === undefined ? groupOrVersion : `${groupOrVersion.split('.')[0]}-${version}`;
  return `${kind.toLowerCase()}-${suffix.toLowerCase()}.json`;
}

type Schema = Record<string, unknown>;

const isRecord = (value: unknown): value is Schema =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * `node` with its `$ref`s inlined (a reference inside itself is left open: `{}`), descriptions dropped, and
 * `additionalProperties: false` on every object schema with properties and no other rule for unknown fields.
 */
export function strictSchema(node: unknown, lookup: (ref: string) => Schema, seen: string[] = []): unknown {
  if (Array.isArray(node)) return node.map((item) => strictSchema(item, lookup, seen));
  if (!isRecord(node)) return node;
  const ref = node['$ref'];
  if (typeof ref === 'string') {
    if (seen.includes(ref)) return {};
    const { $ref: _ref, ...rest } = node;
    return strictSchema({ ...lookup(ref), ...rest }, lookup, [...seen, ref]);
  }
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'description') continue;
    if (key === 'properties' && isRecord(value))
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, child]) => [name, strictSchema(child, lookup, seen)]),
      );
    else out[key] = strictSchema(value, lookup, seen);
  }
  // `allOf: [one]`, the spec's form of a reference with a default: the one schema itself.
  const allOf = out['allOf'];
  if (Array.isArray(allOf) && allOf.length === 1 && isRecord(allOf[0])) {
    delete out['allOf'];
    Object.assign(out, { ...allOf[0], ...out });
  }
  if (
    isRecord(out['properties']) &&
    out['additionalProperties'] === undefined &&
    out['x-kubernetes-preserve-unknown-fields'] !== true
  )
    out['additionalProperties'] = false;
  return out;
}

/** The standalone strict schema of a built-in kind, from its OpenAPI v3 document. */
export function builtInSchema(openApi: Schema, apiVersion: string, kind: string): unknown {
  const schemas = (openApi['components'] as { schemas: Record<string, Schema> }).schemas;
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  const entry = Object.values(schemas).find((schema) =>
    ((schema['x-kubernetes-group-version-kind'] as Schema[] | undefined) ?? []).some(
      (gvk) => gvk['group'] === group && gvk['version'] === version && gvk['kind'] === kind,
    ),
  );
  if (entry === undefined) throw new Error(`no schema for ${apiVersion} ${kind} in the OpenAPI document`);
  const lookup = (ref: string): Schema => {
    const found = schemas[ref.replace('#/components/schemas/', '')];
    if (found === undefined) throw new Error(`unresolved $ref ${ref}`);
    return found;
  };
  return strictSchema(entry, lookup);
}

/** The standalone strict schema of a CRD's version. */
export function crdSchema(crd: Schema, version: string): unknown {
  const versions = ((crd['spec'] as Schema)['versions'] as Schema[] | undefined) ?? [];
  const found = versions.find((v) => v['name'] === version);
  const schema = (found?.['schema'] as Schema | undefined)?.['openAPIV3Schema'];
  if (schema === undefined) throw new Error(`the CRD has no openAPIV3Schema for ${version}`);
  return strictSchema(schema, (ref) => {
    throw new Error(`a CRD schema has no $ref (${ref})`);
  });
}

/** The folder of a Go module at a version, downloaded through the Go module proxy. */
function goModuleDir(module: string, version: string): string {
  const result = spawnSync('go', ['mod', 'download', '-json', `${module}@${version}`], {
    encoding: 'utf8',
    env: { ...process.env, GOFLAGS: '-modcacherw' },
  });
  if (result.status !== 0) throw new Error(`go mod download ${module}@${version} failed: ${result.stderr}`);
  return (JSON.parse(result.stdout) as { Dir: string }).Dir;
}

function main(): void {
  if (process.argv[2] !== '--write') {
    process.stderr.write('usage: kube-schemas --write\n');
    process.exitCode = 2;
    return;
  }
  const kubernetes = join(goModuleDir('k8s.io/kubernetes', `v${KUBERNETES_VERSION}`), 'api/openapi-spec/v3');
  const operator = join(
    goModuleDir('github.com/prometheus-operator/prometheus-operator', `v${PROMETHEUS_OPERATOR_VERSION}`),
    'example/prometheus-operator-crd',
  );
  const out = join(packageRoot(), SCHEMAS_DIR);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  for (const { apiVersion, kind, source } of KINDS) {
    const schema = source.endsWith('.json')
      ? builtInSchema(JSON.parse(readFileSync(join(kubernetes, source), 'utf8')) as Schema, apiVersion, kind)
      : crdSchema(
          parseYaml(readFileSync(join(operator, source), 'utf8')) as Schema,
          apiVersion.split('/')[1] ?? '',
        );
    writeFileSync(join(out, schemaFileName(apiVersion, kind)), `${JSON.stringify(schema)}\n`);
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href)
  main();

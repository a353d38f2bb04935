/**
 * The strict schemas kubeconform validates the chart against (tools/helm/kube-schemas.ts, tools/helm/schemas/):
 * generated so that an object refuses fields it does not declare, as an API server does, and vendored for
 * exactly the kinds the chart renders, at the Kubernetes version the chart is rendered for.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../../src/package-info.js';
import { KUBE_VERSION } from '../../support/helm.js';
import { KUBECONFORM_VERSION } from '../../support/k8s-schemas.js';
import {
  builtInSchema,
  KINDS,
  KUBERNETES_VERSION,
  SCHEMAS_DIR,
  schemaFileName,
  strictSchema,
} from '../../../tools/helm/kube-schemas.js';

const root = packageRoot();

describe('the strict Kubernetes schemas', () => {
  it('close every object schema to undeclared fields, except maps and preserved unknown fields', () => {
    const open = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: { a: {} } };
    const map = { type: 'object', additionalProperties: { type: 'string' } };
    expect(
      strictSchema(
        { type: 'object', description: 'dropped', properties: { open, map, leaf: { type: 'string' } } },
        () => ({}),
      ),
    ).toEqual({
      type: 'object',
      properties: {
        open: { ...open, properties: { a: {} } },
        map,
        leaf: { type: 'string' },
      },
      additionalProperties: false,
    });
  });

  it('inline every reference, the OpenAPI v3 `allOf: [$ref]` form included, and leave a reference to itself open', () => {
    const openApi = {
      components: {
        schemas: {
          'x.Thing': {
            'x-kubernetes-group-version-kind': [{ group: 'things.example', version: 'v1', kind: 'Thing' }],
            properties: {
              spec: { allOf: [{ $ref: '#/components/schemas/x.Spec' }], default: {} },
            },
          },
          'x.Spec': {
            properties: { child: { $ref: '#/components/schemas/x.Spec' }, size: { type: 'integer' } },
          },
        },
      },
    };
    expect(builtInSchema(openApi, 'things.example/v1', 'Thing')).toEqual({
      'x-kubernetes-group-version-kind': [{ group: 'things.example', version: 'v1', kind: 'Thing' }],
      properties: {
        spec: {
          default: {},
          properties: { child: {}, size: { type: 'integer' } },
          additionalProperties: false,
        },
      },
      additionalProperties: false,
    });
  });

  it("are vendored for exactly the kinds the chart renders, under kubeconform's file names", () => {
    expect(readdirSync(join(root, SCHEMAS_DIR)).sort()).toEqual(
      KINDS.map(({ apiVersion, kind }) => schemaFileName(apiVersion, kind)).sort(),
    );
    expect(schemaFileName('apps/v1', 'Deployment')).toBe('deployment-apps-v1.json');
    expect(schemaFileName('v1', 'ConfigMap')).toBe('configmap-v1.json');
    expect(schemaFileName('monitoring.coreos.com/v1', 'PodMonitor')).toBe('podmonitor-monitoring-v1.json');
    const deployment = JSON.parse(
      readFileSync(join(root, SCHEMAS_DIR, 'deployment-apps-v1.json'), 'utf8'),
    ) as { additionalProperties: unknown };
    expect(deployment.additionalProperties).toBe(false);
  });

  it('name one Kubernetes version (the schemas and `helm template --kube-version`) and one kubeconform version', () => {
    expect(KUBE_VERSION).toBe(KUBERNETES_VERSION);
    const ci = /^KUBECONFORM_VERSION=(v\S+)$/m.exec(readFileSync(join(root, '.ci/run'), 'utf8'))?.[1];
    expect(ci).toBe(KUBECONFORM_VERSION);
  });
});

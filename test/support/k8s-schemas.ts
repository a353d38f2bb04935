/**
 * Offline validation of rendered Kubernetes objects against the API's published schemas: Kubernetes 1.27's
 * (npm `kubernetes-models`) and the Prometheus Operator's CRDs (`@kubernetes-models/prometheus-operator`).
 * A kind the chart renders but this table lacks fails the check: every object is validated, none waved through.
 *
 * Limits: these schemas check types, enums, required fields and formats, not unknown fields (the published
 * OpenAPI schemas do not forbid them); the hardening checks read the exact field paths, so a misspelt security
 * field fails those instead.
 */
import { PodMonitor, PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Service, ServiceAccount } from 'kubernetes-models/v1';
import type { K8sObject } from './helm.js';

interface Validatable {
  validate(): void;
}

/** The model class of a kind; the data is checked by its validate(), not by TypeScript. */
const model =
  (Model: new (data: never) => Validatable) =>
  (data: K8sObject): Validatable =>
    new Model(data as never);

const MODELS: Record<string, (data: K8sObject) => Validatable> = {
  'v1/ConfigMap': model(ConfigMap),
  'v1/ServiceAccount': model(ServiceAccount),
  'v1/Service': model(Service),
  'apps/v1/Deployment': model(Deployment),
  'batch/v1/Job': model(Job),
  'policy/v1/PodDisruptionBudget': model(PodDisruptionBudget),
  'networking.k8s.io/v1/NetworkPolicy': model(NetworkPolicy),
  'networking.k8s.io/v1/Ingress': model(Ingress),
  'monitoring.coreos.com/v1/PodMonitor': model(PodMonitor),
  'monitoring.coreos.com/v1/PrometheusRule': model(PrometheusRule),
};

/** Problems of one object, one line each ("<kind>/<name>: <path> <message>"); empty when it is valid. */
export function schemaProblems(object: K8sObject): string[] {
  const label = `${object.kind}/${object.metadata.name}`;
  const build = MODELS[`${object.apiVersion}/${object.kind}`];
  if (build === undefined)
    return [`${label}: no schema for ${object.apiVersion} ${object.kind} in test/support/k8s-schemas.ts`];
  try {
    build(object).validate();
    return [];
  } catch (error) {
    return [`${label}: ${error instanceof Error ? error.message : String(error)}`];
  }
}

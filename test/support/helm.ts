/**
 * The Helm chart (deploy/helm/calls-connector) rendered by a real `helm` binary. Tests that need it fail, never
 * skip, when it is missing: a skipped render would let a broken chart through CI unnoticed.
 *
 * Which binary: `$HELM` if set, else `.tools/helm/helm` (where .ci/run builds it), else `helm` on PATH.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

export const REPO_ROOT = resolve(import.meta.dirname, '../..');
export const CHART = join(REPO_ROOT, 'deploy/helm/calls-connector');
/**
 * The Kubernetes version charts are rendered for (`helm template --kube-version`: helm's own default, 1.20, is
 * older than Chart.yaml's kubeVersion), the version of the API schemas vendored in tools/helm/schemas/.
 */
export const KUBE_VERSION = '1.34.4';
/** The version .ci/run builds; keep the two in step. */
export const HELM_VERSION = 'v3.22.0';

export const HELM_MISSING =
  `helm is not installed: build it with \`GOBIN=$PWD/.tools/helm go install helm.sh/helm/v3/cmd/helm@${HELM_VERSION}\` ` +
  '(Go from https://go.dev/dl; .ci/run does this), or set HELM to a helm 3 binary';

export function helmBinary(): string {
  const fromEnv = process.env['HELM'];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  const built = join(REPO_ROOT, '.tools/helm/helm');
  return existsSync(built) ? built : 'helm';
}

export interface HelmResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function helm(args: readonly string[]): HelmResult {
  const result = spawnSync(helmBinary(), args, { encoding: 'utf8', timeout: 60_000, cwd: REPO_ROOT });
  if (result.error !== undefined) {
    const code = (result.error as NodeJS.ErrnoException).code;
    throw new Error(code === 'ENOENT' ? HELM_MISSING : `helm failed to run: ${result.error.message}`);
  }
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A rendered Kubernetes object, as far as the tests read it. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

/** The fields of a rendered container the tests read. */
export interface PodContainer {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  env?: Array<{ name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }>;
  ports?: Array<{ name: string; containerPort: number }>;
  resources?: { limits?: { memory?: string } };
  securityContext?: Record<string, unknown> & { capabilities?: { drop?: string[]; add?: string[] } };
  volumeMounts?: Array<{ name: string; mountPath: string; readOnly?: boolean }>;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
}
export interface Probe {
  httpGet?: { path: string; port: string | number };
}
/** The fields of a rendered pod template's spec the tests read. */
export interface PodSpec {
  containers: PodContainer[];
  initContainers?: PodContainer[];
  securityContext?: Record<string, unknown> & { seccompProfile?: { type: string } };
  automountServiceAccountToken?: boolean;
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  terminationGracePeriodSeconds?: number;
  volumes?: PodVolume[];
}

export interface PodVolume {
  name: string;
  configMap?: { name: string };
  secret?: { secretName: string; defaultMode?: number };
  emptyDir?: object;
  persistentVolumeClaim?: { claimName: string };
  hostPath?: object;
}

/** Values files by path (relative to the repository) and `--set` pairs. */
export interface RenderOptions {
  values?: readonly string[];
  set?: readonly string[];
  release?: string;
}

function valueArgs(options: RenderOptions): string[] {
  return [
    ...(options.values ?? []).flatMap((file) => ['-f', resolve(REPO_ROOT, file)]),
    ...(options.set ?? []).flatMap((pair) => ['--set', pair]),
  ];
}

/** `helm template`'s arguments: the release, the chart, the Kubernetes version and the values. */
export function templateArgs(options: RenderOptions): string[] {
  return [
    'template',
    options.release ?? 'calls-connector',
    CHART,
    '--kube-version',
    KUBE_VERSION,
    ...valueArgs(options),
  ];
}

/** `helm template`: the objects, or a thrown error with helm's message. */
export function renderChart(options: RenderOptions = {}): K8sObject[] {
  const result = helm(templateArgs(options));
  if (result.status !== 0)
    throw new Error(`helm template failed (${result.status}): ${result.stderr.trim()}`);
  return parseAllDocuments(result.stdout)
    .map((document) => {
      if (document.errors.length > 0)
        throw new Error(`helm rendered invalid YAML: ${document.errors[0]?.message}`);
      return document.toJS() as K8sObject | null;
    })
    .filter((object): object is K8sObject => object !== null);
}

/** `helm template`'s failure message (stderr) for values the chart must refuse; throws if it renders. */
export function renderRefusal(options: RenderOptions): string {
  const result = helm(templateArgs(options));
  if (result.status === 0) throw new Error('helm template rendered values the chart should refuse');
  return result.stderr;
}

export function lintChart(options: RenderOptions): HelmResult {
  return helm(['lint', '--strict', CHART, '--kube-version', KUBE_VERSION, ...valueArgs(options)]);
}

export function only(objects: readonly K8sObject[], kind: string, nameSuffix = ''): K8sObject {
  const found = objects.filter((o) => o.kind === kind && o.metadata.name.endsWith(nameSuffix));
  if (found.length !== 1)
    throw new Error(`expected one ${kind}${nameSuffix ? ` *${nameSuffix}` : ''}, got ${found.length}`);
  return found[0] as K8sObject;
}

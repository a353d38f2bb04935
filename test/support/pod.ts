/**
 * A container of a rendered pod template, run as a local process the way the kubelet would run it: its command
 * and arguments in the image's working directory (the repository root stands for /app), its environment with
 * each `secretKeyRef` resolved from test Secrets, and its volumes materialised under a temporary root, each at
 * its mount path (ConfigMap keys and Secret keys as files, emptyDirs and claims as empty folders).
 *
 * A process cannot see the container's mount namespace, so the mount paths are moved under that root: in the
 * arguments and in the string values of the rendered config.yaml, a path under a mount path becomes the same
 * path under the root, and `TMPDIR` points at the /tmp emptyDir. Nothing else of the rendered pod is changed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parse as parseYaml, stringify } from 'yaml';
import { REPO_ROOT, type K8sObject, type PodSpec } from './helm.js';

/** Secrets as the cluster would hold them: name -> key -> value. */
export type TestSecrets = Record<string, Record<string, string>>;

export interface MaterialisedContainer {
  /** The command and arguments, mount paths moved under `root`. */
  argv: string[];
  /** The container's environment (the pod's variables, resolved), plus TMPDIR for the /tmp emptyDir. */
  env: Record<string, string>;
  root: string;
  /** The rendered config.yaml as the process reads it (mount paths moved), parsed. */
  config: Record<string, unknown>;
}

/** Materialises the first container of `workload`'s pod template (a Deployment or a Job), or of a Pod. */
export async function materialise(
  objects: readonly K8sObject[],
  workload: K8sObject,
  secrets: TestSecrets,
): Promise<MaterialisedContainer> {
  const pod =
    workload.kind === 'Pod'
      ? (workload['spec'] as PodSpec)
      : (workload['spec'] as { template: { spec: PodSpec } }).template.spec;
  const container = pod.containers[0];
  if (container === undefined) throw new Error(`${workload.metadata.name} has no container`);
  const root = await mkdtemp(join(tmpdir(), 'calls-pod-'));
  const mounts = container.volumeMounts ?? [];
  const moved = (value: string): string =>
    mounts.some((m) => value === m.mountPath || value.startsWith(`${m.mountPath}/`))
      ? join(root, value)
      : value;
  const secret = (name: string): Record<string, string> => {
    const found = secrets[name];
    if (found === undefined)
      throw new Error(`the pod refers to Secret ${name}, which the test does not hold`);
    return found;
  };

  let config: Record<string, unknown> | undefined;
  for (const mount of mounts) {
    const volume = pod.volumes?.find((v) => v.name === mount.name);
    if (volume === undefined) throw new Error(`volumeMount ${mount.name} has no volume`);
    const at = join(root, mount.mountPath);
    await mkdir(at, { recursive: true });
    let files: Record<string, string> = {};
    if (volume.configMap !== undefined) {
      const configMap = objects.find(
        (o) => o.kind === 'ConfigMap' && o.metadata.name === volume.configMap?.name,
      );
      if (configMap === undefined) throw new Error(`ConfigMap ${volume.configMap.name} is not rendered`);
      files = { ...(configMap['data'] as Record<string, string>) };
      const rendered = files['config.yaml'];
      if (rendered !== undefined) {
        config = movePaths(parseYaml(rendered), moved) as Record<string, unknown>;
        files['config.yaml'] = stringify(config);
      }
    } else if (volume.secret !== undefined) files = secret(volume.secret.secretName);
    else if (volume.emptyDir === undefined && volume.persistentVolumeClaim === undefined)
      throw new Error(`volume ${volume.name}: a kind the test cannot materialise`);
    for (const [key, content] of Object.entries(files)) {
      await mkdir(dirname(join(at, key)), { recursive: true });
      await writeFile(join(at, key), content, { mode: 0o600 });
    }
  }
  if (config === undefined) throw new Error(`${workload.metadata.name} mounts no config.yaml`);

  const env: Record<string, string> = {};
  for (const variable of container.env ?? []) {
    const ref = variable.valueFrom?.secretKeyRef;
    const value = ref === undefined ? variable.value : secret(ref.name)[ref.key];
    if (value === undefined) throw new Error(`env ${variable.name}: no value (Secret key missing?)`);
    env[variable.name] = value;
  }
  const tmp = mounts.find((m) => m.mountPath === '/tmp');
  if (tmp !== undefined) env['TMPDIR'] = join(root, '/tmp');
  const argv = [...(container.command ?? []), ...(container.args ?? [])].map(moved);
  return { argv, env, root, config };
}

function movePaths(value: unknown, moved: (path: string) => string): unknown {
  if (typeof value === 'string') return moved(value);
  if (Array.isArray(value)) return value.map((item) => movePaths(item, moved));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, movePaths(v, moved)]));
  return value;
}

export interface RunningContainer {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/**
 * Starts the materialised container: `node` (the image's) is this Node, the working directory the repository
 * (the image's /app). The environment is the image's (PATH, NODE_ENV) and the pod's, nothing of the test's.
 */
export function runContainer(container: MaterialisedContainer): RunningContainer {
  const [program, ...args] = container.argv;
  if (program !== 'node') throw new Error(`the container runs ${program}, not node`);
  const child = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env['PATH'] ?? '', NODE_ENV: 'production', ...container.env },
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return { child, output: () => output, exited };
}

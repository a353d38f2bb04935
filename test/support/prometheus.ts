/**
 * A real Prometheus server (Debian package `prometheus`) started for one test: its own config, data
 * directory and loopback port. Tests that need it fail, never skip, when the binary is missing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { parse, stringify } from 'yaml';
import { freeLoopbackPort } from '../../src/demo/free-port.js';

export const PROMETHEUS_MISSING =
  'prometheus is not installed: run `apt-get update && apt-get install -y prometheus` (Debian package `prometheus`, which also ships promtool); .ci/run installs it';

export interface PromSeries {
  metric: Record<string, string>;
  value: [number, string];
}

export interface PromAlert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
}

export interface RunningPrometheus {
  url: string;
  /** An instant query at the server's now; throws with Prometheus' own error on a bad expression. */
  query(expr: string): Promise<PromSeries[]>;
  /** Pending and firing alerts. */
  alerts(): Promise<PromAlert[]>;
  /** Waits until every target has been scraped successfully at least once. */
  targetsUp(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface PrometheusOptions {
  /** The whole prometheus.yml; `rule_files` are resolved against the directory the rules are written to. */
  config: Record<string, unknown>;
  /** File name -> rules document, written beside the config. */
  rules?: Record<string, unknown>;
}

export async function startPrometheus(options: PrometheusOptions): Promise<RunningPrometheus> {
  const dir = await mkdtemp(join(tmpdir(), 'calls-prometheus-'));
  for (const [name, document] of Object.entries(options.rules ?? {})) {
    await writeFile(join(dir, name), stringify(document));
  }
  await writeFile(join(dir, 'prometheus.yml'), stringify(options.config));
  const port = await freeLoopbackPort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4000)));
  await new Promise<void>((resolveSpawn, reject) => {
    child.once('spawn', resolveSpawn);
    child.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new Error(
          error.code === 'ENOENT' ? PROMETHEUS_MISSING : `prometheus failed to start: ${error.message}`,
        ),
      ),
    );
  });

  const stop = async () => {
    await stopChild(child);
    await rm(dir, { recursive: true, force: true });
  };
  const api = async <T>(path: string): Promise<T> => {
    const response = await request(`${url}${path}`);
    const body = (await response.body.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success')
      throw new Error(`prometheus ${path}: ${body.error ?? response.statusCode}`);
    return body.data;
  };

  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) {
      await rm(dir, { recursive: true, force: true });
      throw new Error(`prometheus exited with ${child.exitCode} at start-up: ${stderr.trim()}`);
    }
    const ready = await request(`${url}/-/ready`).then(
      async (r) => (await r.body.text(), r.statusCode === 200),
      () => false,
    );
    if (ready) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`prometheus was not ready within 30 s: ${stderr.trim()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  return {
    url,
    query: async (expr) =>
      (await api<{ result: PromSeries[] }>(`/api/v1/query?query=${encodeURIComponent(expr)}`)).result,
    alerts: async () => (await api<{ alerts: PromAlert[] }>('/api/v1/alerts')).alerts,
    targetsUp: async (timeoutMs = 15_000) => {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const { activeTargets } = await api<{ activeTargets: { health: string; lastError: string }[] }>(
          '/api/v1/targets?state=active',
        );
        if (activeTargets.length > 0 && activeTargets.every((t) => t.health === 'up')) return;
        if (Date.now() > until) {
          throw new Error(`prometheus targets not up: ${JSON.stringify(activeTargets)}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    stop,
  };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/** Reads a YAML file (the shipped alert rules, prometheus.yml). */
export async function readYaml(path: string): Promise<Record<string, unknown>> {
  return parse(await readFile(path, 'utf8')) as Record<string, unknown>;
}

const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86_400 };

/** A Prometheus duration (`5m`, `1h`, `90s`) in seconds. */
export function durationSeconds(text: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (match === null) throw new Error(`not a simple Prometheus duration: ${text}`);
  return Number(match[1]) * (UNIT_SECONDS[match[2] ?? 's'] ?? 1);
}

/** Seconds as a Prometheus duration, in whole milliseconds, at least 1 s (one evaluation interval here). */
function scaledDuration(text: string, factor: number): string {
  return `${Math.max(1000, Math.round((durationSeconds(text) * 1000) / factor))}ms`;
}

/**
 * The rules with time compressed by `factor`: every `for:`, every range selector and every literal
 * grace period in seconds (`+ N`, listed by alert in `graceSeconds` so a changed rule fails here loudly
 * rather than keep its full grace) divided by `factor`. What the connector exports (its poll interval,
 * its round, its timestamps) is real time and is left alone: the rules judge a real connector, only
 * sooner. Thresholds on counts and ratios are unchanged.
 */
export function compressRules(
  rules: Record<string, unknown>,
  factor: number,
  graceSeconds: Record<string, number>,
): Record<string, unknown> {
  const groups = (rules.groups as { name: string; rules: Record<string, unknown>[] }[]).map((group) => ({
    ...group,
    rules: group.rules.map((rule) => {
      let expr = String(rule.expr).replace(
        /\[(\d+(?:ms|s|m|h|d))\]/g,
        (_, d: string) => `[${scaledDuration(d, factor)}]`,
      );
      const alert = typeof rule.alert === 'string' ? rule.alert : '';
      const grace = graceSeconds[alert];
      if (grace !== undefined) {
        const literal = new RegExp(`\\+\\s*${grace}\\b`);
        if (!literal.test(expr))
          throw new Error(`${alert}: no "+ ${grace}" grace term in its expression any more`);
        expr = expr.replace(literal, `+ ${grace / factor}`);
      }
      return {
        ...rule,
        expr,
        ...(typeof rule.for === 'string' ? { for: scaledDuration(rule.for, factor) } : {}),
      };
    }),
  }));
  return { ...rules, groups };
}

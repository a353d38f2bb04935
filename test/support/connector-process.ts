/**
 * The built CLI (`calls-connector run`) as a child process, for tests of what happens between processes:
 * crashes, rolling restarts. Also the "caught up" condition they wait on: every location's stored offset
 * has no cursor and a watermark at the sandbox's newest updatedAt.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import type { OffsetStore } from '../../src/sync/ports.js';
import type { RunningSandbox } from '../../packages/sandbox/src/index.js';
import { versionId, type PublishedCall } from './connector.js';

const cli = resolve(import.meta.dirname, '../../dist/src/cli/main.js');

export interface ConnectorProcess {
  child: ChildProcess;
  /** stdout and stderr so far. */
  output: () => string;
  /** Resolves with the exit code (null when ended by a signal). */
  exited: Promise<number | null>;
}

/** `env`: added to this process's environment (store key, client secret as `${ENV}` references). */
export function startConnectorProcess(configFile: string, env: NodeJS.ProcessEnv = {}): ConnectorProcess {
  const child = spawn(process.execPath, [cli, 'run', '--config', configFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return { child, output: () => output, exited };
}

/** True once every sandbox location's stored offset has reached the newest call of that location, history lane merged. */
export function caughtUpCheck(sandbox: RunningSandbox, store: OffsetStore): () => Promise<boolean> {
  const lastUpdatedAt = new Map(
    sandbox.locations.map((l) => [l, sandbox.admin.truth(l).at(-1)?.updatedAt ?? null] as const),
  );
  return async () => {
    const offsets = await store.loadAll();
    return sandbox.locations.every((l) => {
      const offset = offsets.get(l);
      const last = lastUpdatedAt.get(l);
      return (
        offset !== undefined &&
        // A split location's live lane is at the newest call long before its history lane merged.
        offset.history === undefined &&
        offset.cursor === null &&
        offset.watermark !== null &&
        last !== null &&
        last !== undefined &&
        new Date(offset.watermark).getTime() === new Date(last).getTime()
      );
    });
  };
}

/** Call versions (uid@updatedAt) published more than once, and those of the truth never published. */
export function doubledAndMissing(
  published: readonly PublishedCall[],
  truth: ReadonlyArray<{ uid: string; updatedAt: string }>,
): { doubled: string[]; missing: string[] } {
  const counts = new Map<string, number>();
  for (const call of published) counts.set(versionId(call), (counts.get(versionId(call)) ?? 0) + 1);
  return {
    doubled: [...counts].filter(([, n]) => n > 1).map(([id]) => id),
    missing: truth.map(versionId).filter((id) => !counts.has(id)),
  };
}

/**
 * Awaits `step`; when it fails, fails with its error plus the last `lines` log lines of each process, so that a
 * failure in CI says what the connectors were doing (a test's assertion message alone rarely does).
 */
export async function explainedBy<T>(
  step: Promise<T>,
  processes: ReadonlyArray<readonly [string, ConnectorProcess]>,
  lines = 40,
): Promise<T> {
  try {
    return await step;
  } catch (error) {
    const tails = processes.map(
      ([name, p]) =>
        `--- ${name} (exit ${String(p.child.exitCode)}), last log lines:\n${p.output().split('\n').slice(-lines).join('\n')}`,
    );
    throw new Error(`${String(error)}\n${tails.join('\n')}`, { cause: error });
  }
}

/**
 * A connector instance as an OS process of its own, for the bench modules that watch it from the outside as an
 * operator would (bench/distributed.ts, bench/restart.ts): the built CLI (`calls-connector run --config`), its
 * output kept (the tail, for a failed run's message) with the time each line arrived, its metrics server's URL
 * read from its start log line, and a stop that waits for its exit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';

const CLI = new URL('../src/cli/main.js', import.meta.url);
/** Bytes of an instance's output kept for the message of a failed run. */
const OUTPUT_TAIL = 20_000;
const LISTENING = /"url":"(http:\/\/[^"]+)","msg":"metrics, \/healthz and \/readyz listening"/;

export interface Instance {
  name: string;
  child: ChildProcess;
  /** When the process was spawned (ms since the epoch). */
  startedAt: number;
  output: () => string;
  /** The first time (ms since the epoch) a line whose `msg` is `message` arrived; undefined until one has. */
  firstLogAt: (message: string) => number | undefined;
  exited: Promise<unknown>;
  killed: boolean;
  /** Base URL of its metrics server (/status, /metrics), from its start log line. */
  url: () => string | undefined;
}

export function startInstance(name: string, configFile: string): Instance {
  const startedAt = Date.now();
  const child = spawn(process.execPath, [CLI.pathname, 'run', '--config', configFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let partial = '';
  let url: string | undefined;
  const firstSeen = new Map<string, number>();
  const keep = (chunk: Buffer) => {
    const text = chunk.toString();
    output = (output + text).slice(-OUTPUT_TAIL);
    url ??= LISTENING.exec(output)?.[1];
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    const at = Date.now();
    for (const line of lines) {
      const message = /"msg":"([^"]*)"/.exec(line)?.[1];
      if (message !== undefined && !firstSeen.has(message)) firstSeen.set(message, at);
    }
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return {
    name,
    child,
    startedAt,
    output: () => output,
    firstLogAt: (message) => firstSeen.get(message),
    exited: once(child, 'exit'),
    killed: false,
    url: () => url,
  };
}

/** GET a path of a live instance; undefined when it does not answer within a second (starting, killed). */
export async function get(instance: Instance, path: string): Promise<string | undefined> {
  const url = instance.url();
  if (url === undefined || instance.killed || instance.child.exitCode !== null) return undefined;
  try {
    const response = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(1000) });
    return response.ok ? await response.text() : undefined;
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux); 0 when it is gone. */
export async function cpuSeconds(pid: number | undefined): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of proc(5) (utime, stime), counted from the state (field 3) here; clock ticks of 1/100 s.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** kill -9, as a crash does: marks it killed and resolves once it exited. */
export async function killInstance(instance: Instance): Promise<void> {
  instance.child.kill('SIGKILL');
  instance.killed = true;
  await instance.exited;
}

/** SIGTERM every live instance and waits for its exit (SIGKILL after 15 s). */
export async function stopAll(instances: readonly Instance[]): Promise<void> {
  await Promise.all(
    instances
      .filter((i) => i.child.exitCode === null && i.child.signalCode === null)
      .map(async (i) => {
        i.child.kill('SIGTERM');
        const timer = setTimeout(() => i.child.kill('SIGKILL'), 15_000);
        await i.exited;
        clearTimeout(timer);
      }),
  );
}

/**
 * The consumer examples (examples/) as child processes: a process printing one JSON line per record,
 * read until a condition holds, then stopped (SIGTERM, SIGKILL after 10 s). An example that does not get
 * there in time is asked where it waits (its `dumpSignal`, e.g. SIGABRT for Python's faulthandler) before
 * the failure is reported with what it printed.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface ExampleProcess {
  child: ChildProcess;
  /** The JSON lines printed so far, parsed. */
  lines: () => Record<string, unknown>[];
  /** stderr so far (for failure messages). */
  stderr: () => string;
  /** Whether the process has ended (by itself: a failure, its stderr says why). */
  exited: () => boolean;
  stop(): Promise<void>;
  /**
   * Sends the signal the example answers by printing its threads' stacks and ending (null: it has none,
   * it is only stopped), and waits up to 10 s for it to end. Called on a timeout, before reporting.
   */
  dumpStacks(): Promise<void>;
}

export function startExample(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  dumpSignal: NodeJS.Signals | null = null,
): ExampleProcess {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const lines: Record<string, unknown>[] = [];
  let partial = '';
  let stderr = '';
  let ended = false;
  const exit = new Promise<void>((done) =>
    child.once('close', () => {
      ended = true;
      done();
    }),
  );
  child.once('error', (error) => (stderr += `\n${command} did not start: ${error.message}`));
  child.stdout?.on('data', (chunk: Buffer) => {
    const text = partial + chunk.toString('utf8');
    const complete = text.split('\n');
    partial = complete.pop() ?? '';
    for (const line of complete)
      if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
  });
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-16_000)));
  const stopWith = async (signal: NodeJS.Signals) => {
    if (ended) return;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exit;
    clearTimeout(timer);
  };
  return {
    child,
    lines: () => lines,
    stderr: () => stderr,
    exited: () => ended,
    stop: () => stopWith('SIGTERM'),
    dumpStacks: () => stopWith(dumpSignal ?? 'SIGTERM'),
  };
}

/** Polls `check` every 100 ms until true; fails naming `what` and the example's stderr. */
export async function untilExample(
  example: ExampleProcess,
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (example.exited()) throw new Error(`the example exited before ${what}:\n${example.stderr()}`);
    if (Date.now() > deadline) {
      await example.dumpStacks();
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what} (${example.lines().length} lines printed); ` +
          `its stderr, ending with where it waited:\n${example.stderr()}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

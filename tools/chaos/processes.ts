/**
 * The processes of a chaos run, started as an operator starts them: the built CLI (`node dist/src/cli/main.js
 * …`) and scripts/stack.mjs, each with its output appended to its own log file. Peak resident memory of each
 * process is sampled from /proc while it runs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';

export const repoRoot = resolve(import.meta.dirname, '..', '..', '..');
export const cliPath = resolve(repoRoot, 'dist', 'src', 'cli', 'main.js');
export const stackScript = resolve(repoRoot, 'scripts', 'stack.mjs');

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A child process whose stdout and stderr go to a log file. */
export class LoggedProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<Exit>;
  readonly startedAt = Date.now();
  exit: Exit | null = null;
  peakRssBytes = 0;
  private readonly sampler: NodeJS.Timeout;

  constructor(
    readonly name: string,
    args: string[],
    readonly logFile: string,
    env: NodeJS.ProcessEnv,
  ) {
    const fd = openSync(logFile, 'a');
    this.child = spawn(process.execPath, args, { cwd: repoRoot, env, stdio: ['ignore', fd, fd] });
    closeSync(fd);
    this.exited = new Promise((done) =>
      this.child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        clearInterval(this.sampler);
        done(this.exit);
      }),
    );
    this.sampler = setInterval(() => this.sampleRss(), 500);
    this.sampler.unref();
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get running(): boolean {
    return this.exit === null;
  }

  signal(signal: NodeJS.Signals): void {
    if (this.running) this.child.kill(signal);
  }

  /** The last lines of its log (for reports of unexpected exits). */
  tail(lines = 5): string {
    try {
      return readFileSync(this.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  }

  private sampleRss(): void {
    try {
      const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      this.peakRssBytes = Math.max(this.peakRssBytes, kb * 1024);
    } catch {
      /* not running (or no /proc): no sample */
    }
  }
}

/**
 * The line of a log tail that says why a process ended: the CLI's closing line names the error code
 * (`calls-connector: [CODE] message`); else the last line.
 */
export function closingLine(tail: string): string {
  const lines = tail.split('\n');
  return (lines.find((l) => /\[[A-Z][A-Z0-9_]+\]/.test(l)) ?? lines.at(-1) ?? '').slice(0, 300);
}

/** Runs a command to completion; resolves with its exit code and output (stdout, stderr). */
export function runToEnd(
  args: string[],
  env: NodeJS.ProcessEnv,
  onStdout?: (text: string) => void,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, args, { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      onStdout?.(stdout);
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', fail);
    child.once('exit', (code) => done({ code, stdout, stderr }));
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `condition` every `everyMs` until it holds (true) or `timeoutMs` passes (false). */
export async function until(
  condition: () => Promise<boolean> | boolean,
  timeoutMs: number,
  everyMs = 250,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await condition()) return true;
    } catch {
      /* not yet */
    }
    if (Date.now() >= deadline) return false;
    await sleep(everyMs);
  }
}

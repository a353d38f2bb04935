/**
 * Token-store backend for a single instance: one JSON file of sealed entries, mode 0600.
 *
 * Every change is an atomic replace: write a temp file (0600) in the same directory, fsync it, rename it
 * over the store, fsync the directory. A crash leaves either the old file or the new one, never a torn one.
 * A lock file (`<path>.lock`, created exclusively) serializes read-modify-write between processes, e.g. a
 * running connector rotating a refresh token while a person runs `auth url`; a lock older than
 * `staleLockMs` is taken to be left by a crashed process and broken.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { FatalError, RetriableError } from '../../errors/index.js';
import { readPrivateFile } from '../../secrets/secret-file.js';
import type { EntryBackend } from './token-store.js';
import { backoffDelayMs, type Backoff } from '../../time/backoff.js';
import { systemClock, type Clock } from '../../time/clock.js';

const FORMAT = 'calls-connector-token-store';

/** Polls of a lock another process holds: 10 ms doubling to 250 ms (time/backoff.ts), until lockTimeoutMs. */
const LOCK_POLL: Backoff = Object.freeze({ initialDelayMs: 10, maxDelayMs: 250, multiplier: 2, jitter: 0 });

interface FileDocument {
  format: typeof FORMAT;
  version: 1;
  entries: Record<string, string>;
}

export interface FileBackendOptions {
  path: string;
  /** How long to wait for another process's lock before giving up. */
  lockTimeoutMs?: number;
  /** A lock older than this is considered abandoned. */
  staleLockMs?: number;
  /** Where lock waits and ages are read (default: the system clock; lock ages compare with file mtimes). */
  clock?: Clock;
}

export class FileBackend implements EntryBackend {
  readonly description: string;
  private readonly path: string;
  private readonly lockTimeoutMs: number;
  private readonly staleLockMs: number;
  private readonly clock: Clock;
  /** Serializes updates within this process; the lock file does it between processes. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(options: FileBackendOptions) {
    if (options.path.length === 0) throw new TypeError('FileBackend needs a path');
    this.path = options.path;
    this.description = `file ${options.path}`;
    this.lockTimeoutMs = options.lockTimeoutMs ?? 10_000;
    this.staleLockMs = options.staleLockMs ?? 30_000;
    this.clock = options.clock ?? systemClock;
  }

  async readAll(): Promise<ReadonlyMap<string, Buffer>> {
    let text: string;
    try {
      text = await readPrivateFile(this.path, 'the token store');
    } catch (error) {
      if (error instanceof FatalError) throw error;
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
      throw new FatalError(
        'AUTH_STORE_UNREADABLE',
        `cannot read the token store ${this.path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
        {
          cause: error,
        },
      );
    }
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch (error) {
      throw new FatalError(
        'AUTH_STORE_CORRUPT',
        `the token store ${this.path} is not a token-store file (invalid JSON)`,
        { cause: error },
      );
    }
    if (!isFileDocument(document)) {
      throw new FatalError(
        'AUTH_STORE_CORRUPT',
        `the token store ${this.path} is not a ${FORMAT} version 1 file`,
      );
    }
    return new Map(
      Object.entries(document.entries).map(([name, value]) => [name, Buffer.from(value, 'base64')]),
    );
  }

  update<T>(
    mutate: (current: ReadonlyMap<string, Buffer>) => { changes: Map<string, Buffer | null>; result: T },
  ): Promise<T> {
    const run = this.queue.then(() => this.updateLocked(mutate));
    this.queue = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    await this.queue;
  }

  private async updateLocked<T>(
    mutate: (current: ReadonlyMap<string, Buffer>) => { changes: Map<string, Buffer | null>; result: T },
  ): Promise<T> {
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    const release = await this.lock();
    try {
      const current = await this.readAll();
      const { changes, result } = mutate(current);
      if (changes.size === 0) return result;
      const next = new Map(current);
      for (const [name, value] of changes) {
        if (value === null) next.delete(name);
        else next.set(name, value);
      }
      await this.replace(next);
      return result;
    } finally {
      await release();
    }
  }

  private async replace(entries: ReadonlyMap<string, Buffer>): Promise<void> {
    const document: FileDocument = {
      format: FORMAT,
      version: 1,
      entries: Object.fromEntries([...entries].map(([name, value]) => [name, value.toString('base64')])),
    };
    const temp = join(
      dirname(this.path),
      `.${basename(this.path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`,
    );
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(document, null, 2)}\n`, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await rename(temp, this.path);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
    await syncDirectory(dirname(this.path));
  }

  /** Takes `<path>.lock`; returns its release. */
  private async lock(): Promise<() => Promise<void>> {
    const lockPath = `${this.path}.lock`;
    const deadline = this.clock.now() + this.lockTimeoutMs;
    for (let waits = 1; ; waits++) {
      try {
        const handle = await open(lockPath, 'wx', 0o600);
        await handle.writeFile(String(process.pid));
        await handle.close();
        return () => rm(lockPath, { force: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const age = await stat(lockPath).then(
        (s) => this.clock.now() - s.mtimeMs,
        () => 0,
      );
      if (age > this.staleLockMs) {
        await rm(lockPath, { force: true });
        continue;
      }
      if (this.clock.now() > deadline) {
        throw new RetriableError(
          'AUTH_STORE_LOCKED',
          `the token store ${this.path} is locked by another process (${lockPath})`,
        );
      }
      await this.clock.sleep(backoffDelayMs(LOCK_POLL, waits, this.clock.random()));
    }
  }
}

function isFileDocument(value: unknown): value is FileDocument {
  if (value === null || typeof value !== 'object') return false;
  const doc = value as Partial<FileDocument>;
  return (
    doc.format === FORMAT &&
    doc.version === 1 &&
    doc.entries !== null &&
    typeof doc.entries === 'object' &&
    Object.values(doc.entries).every((v) => typeof v === 'string')
  );
}

/** Makes a rename durable: fsync of the containing directory (a no-op where the platform refuses it). */
async function syncDirectory(directory: string): Promise<void> {
  let handle;
  try {
    handle = await open(directory, 'r');
    await handle.sync();
  } catch {
    // Some platforms (Windows) cannot fsync a directory; the rename is still atomic.
  } finally {
    await handle?.close();
  }
}

/** An in-memory EntryBackend for unit tests, with hooks to make writes fail or wait (crash simulation). */
import type { EntryBackend } from '../../../src/auth/store/token-store.js';

export class MemoryBackend implements EntryBackend {
  readonly description = 'memory';
  readonly entries = new Map<string, Buffer>();
  writes = 0;
  /** When set, the next update throws this instead of writing. */
  failNextWrite: Error | undefined;
  /** When set, updates wait for this before writing. */
  gate: Promise<void> | undefined;
  /** Updates currently held at the gate. */
  waiting = 0;

  async readAll(): Promise<ReadonlyMap<string, Buffer>> {
    return new Map(this.entries);
  }

  async update<T>(
    mutate: (current: ReadonlyMap<string, Buffer>) => { changes: Map<string, Buffer | null>; result: T },
  ): Promise<T> {
    if (this.gate !== undefined) {
      this.waiting++;
      await this.gate;
      this.waiting--;
    }
    const { changes, result } = mutate(new Map(this.entries));
    if (changes.size > 0 && this.failNextWrite !== undefined) {
      const error = this.failNextWrite;
      this.failNextWrite = undefined;
      throw error;
    }
    for (const [name, value] of changes) {
      if (value === null) this.entries.delete(name);
      else this.entries.set(name, value);
    }
    if (changes.size > 0) this.writes++;
    return result;
  }

  async close(): Promise<void> {}
}

/**
 * Wraps a real EntryBackend to simulate the process dying around a write: `before-write` throws instead of
 * writing (the token response arrived, the store never saw it); `after-write` writes durably, then throws
 * (the store has it, the caller never got to use it). Disarms itself after one crash.
 */
import type { EntryBackend } from '../../../src/auth/store/token-store.js';

export class SimulatedCrash extends Error {
  constructor(when: string) {
    super(`simulated crash ${when}`);
  }
}

export class CrashingBackend implements EntryBackend {
  armed: 'before-write' | 'after-write' | undefined;

  constructor(private readonly inner: EntryBackend) {}

  get description(): string {
    return this.inner.description;
  }

  readAll(): Promise<ReadonlyMap<string, Buffer>> {
    return this.inner.readAll();
  }

  async update<T>(
    mutate: (current: ReadonlyMap<string, Buffer>) => { changes: Map<string, Buffer | null>; result: T },
  ): Promise<T> {
    const armed = this.armed;
    this.armed = undefined;
    if (armed === 'before-write') throw new SimulatedCrash('before the token store write');
    const result = await this.inner.update(mutate);
    if (armed === 'after-write') throw new SimulatedCrash('after the token store write');
    return result;
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

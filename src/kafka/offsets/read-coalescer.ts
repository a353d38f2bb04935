/**
 * Shares one read among concurrent callers without ever giving a caller a read that started before
 * its call. When many locations fail together (one failed transaction holds many pages), each asks the
 * offset store for what is really stored; without this, each would read the whole offsets topic.
 *
 * Rule: a call while no read runs starts one. Calls while a read runs all wait for the next read,
 * which starts when the running one ends. So at most two reads are queued, and every caller sees
 * everything committed before its call.
 */
export class ReadCoalescer<T> {
  private running: Promise<T> | undefined;
  private queued: Promise<T> | undefined;

  constructor(private readonly read: () => Promise<T>) {}

  get(): Promise<T> {
    if (this.running === undefined) {
      const run = this.read().finally(() => {
        if (this.running === run) this.running = undefined;
      });
      this.running = run;
      return run;
    }
    if (this.queued === undefined) {
      const after = this.running.then(
        () => undefined,
        () => undefined,
      );
      this.queued = after.then(() => {
        this.queued = undefined;
        return this.get();
      });
    }
    return this.queued;
  }
}

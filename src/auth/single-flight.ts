/**
 * One operation at a time, shared: callers that ask while it runs get the same promise, and each of them may
 * stop waiting (its own AbortSignal) without cancelling it for the others.
 */
export class SingleFlight<T> {
  private running: Promise<T> | undefined;

  /** The operation under way, or a new one from `start`. */
  run(start: () => Promise<T>): Promise<T> {
    this.running ??= start().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }
}

/** Lets one waiter give up without cancelling the shared refresh the others wait on. */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.finally(() => signal.removeEventListener('abort', onAbort)).then(resolve, reject);
  });
}

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}

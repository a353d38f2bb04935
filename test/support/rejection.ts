/** What a promise rejects with (undefined when it resolves), for asserting on an error's code. */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

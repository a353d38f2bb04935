/** What `fn` throws synchronously (undefined when it returns), for asserting on an error's code. */
export function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

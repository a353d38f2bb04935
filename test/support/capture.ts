/** Captures what is written to stdout or stderr during a test (restored by vi.restoreAllMocks()). */
import { vi } from 'vitest';

export function capture(stream: NodeJS.WriteStream): { text: () => string } {
  let out = '';
  vi.spyOn(stream, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    return true;
  });
  return { text: () => out };
}

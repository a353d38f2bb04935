import { describe, expect, it } from 'vitest';
import { isLoopback } from '../../../../src/cli/commands/sandbox-options.js';

describe('isLoopback', () => {
  it('is true for localhost, ::1 and any 127.x.y.z address', () => {
    for (const host of ['localhost', '::1', '127.0.0.1', '127.1.2.3']) expect(isLoopback(host)).toBe(true);
  });

  it('is false for any other address', () => {
    for (const host of ['0.0.0.0', '::', '192.168.1.10', 'sandbox.example', '127.0.0.1.example'])
      expect(isLoopback(host)).toBe(false);
  });
});

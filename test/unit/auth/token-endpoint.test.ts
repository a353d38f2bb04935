import { describe, expect, it } from 'vitest';
import { scrub } from '../../../src/auth/token-endpoint.js';

describe('scrub', () => {
  it('replaces every occurrence of each secret in text that came back from the server', () => {
    expect(scrub('token abcd1234 and abcd1234, secret s3cr3t!', ['abcd1234', 's3cr3t!'])).toBe(
      'token [redacted] and [redacted], secret [redacted]',
    );
  });

  it('leaves text alone when a "secret" is too short to be one (avoids shredding the message)', () => {
    expect(scrub('a b c', ['a'])).toBe('a b c');
  });
});

import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readCodeArgument } from '../../../../src/cli/commands/auth.js';

describe('auth redeem --code', () => {
  it('reads the code from the first line of stdin for `-`, so it never appears in ps', async () => {
    expect(await readCodeArgument('-', Readable.from(['Sx8f2kQp', '0aZr\nignored\n']))).toBe('Sx8f2kQp0aZr');
    expect(await readCodeArgument('-', Readable.from(['  code-1  ']))).toBe('code-1');
  });

  it('takes any other value as the code itself', async () => {
    expect(await readCodeArgument('abc', Readable.from(['unused\n']))).toBe('abc');
  });

  it('refuses an empty stdin with a message saying what was expected', async () => {
    await expect(readCodeArgument('-', Readable.from(['\n']))).rejects.toThrow(
      /stdin held no authorization code/,
    );
  });
});

import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeKey, loadStoreKey } from '../../../../src/auth/store/store-key.js';

describe('decodeKey', () => {
  const raw = randomBytes(32);

  it('accepts 64 hex digits', () => {
    expect(decodeKey(raw.toString('hex'))?.equals(raw)).toBe(true);
  });

  it('accepts standard and URL-safe base64, with surrounding whitespace', () => {
    expect(decodeKey(` ${raw.toString('base64')}\n`)?.equals(raw)).toBe(true);
    expect(decodeKey(raw.toString('base64url'))?.equals(raw)).toBe(true);
  });

  it('refuses keys of the wrong length or alphabet', () => {
    expect(decodeKey(randomBytes(16).toString('base64'))).toBeUndefined();
    expect(decodeKey('not a key at all')).toBeUndefined();
  });
});

describe('loadStoreKey', () => {
  it('reads the key from the named environment variable', async () => {
    const raw = randomBytes(32);
    const key = await loadStoreKey({ keyEnv: 'K' }, { K: raw.toString('base64') });
    expect(key.id).toMatch(/^[0-9a-f]{16}$/);
  });

  it('explains how to make a key when the variable is unset, naming the variable', async () => {
    await expect(loadStoreKey({ keyEnv: 'MY_KEY' }, {})).rejects.toThrow(/MY_KEY.*openssl rand -base64 32/);
  });

  it('never repeats an invalid key in its error', async () => {
    const bad = 'c2VjcmV0LWJ1dC13cm9uZy1sZW5ndGg=';
    const error = await loadStoreKey({ keyEnv: 'K' }, { K: bad }).catch((e: unknown) => e as Error);
    expect(error).toMatchObject({ code: 'AUTH_STORE_KEY_INVALID' });
    expect((error as Error).message).not.toContain(bad);
  });

  it('reads a key file and prefers it to the environment', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'key-'));
    const raw = randomBytes(32);
    await writeFile(join(dir, 'token.key'), raw.toString('hex'), { mode: 0o600 });
    const fromFile = await loadStoreKey(
      { keyEnv: 'K', keyFile: join(dir, 'token.key') },
      { K: randomBytes(32).toString('hex') },
    );
    const fromEnv = await loadStoreKey({ keyEnv: 'K' }, { K: raw.toString('hex') });
    expect(fromFile.id).toBe(fromEnv.id);
  });

  it('refuses a key file kept in the same directory as the token file', async () => {
    await expect(
      loadStoreKey({ keyEnv: 'K', keyFile: '/data/tokens/key', dataFile: '/data/tokens/tokens.enc' }),
    ).rejects.toMatchObject({
      code: 'AUTH_STORE_KEY_BESIDE_DATA',
    });
  });

  it('refuses a key file in a folder above or below the token file, and accepts one elsewhere', async () => {
    const dataFile = '/data/tokens/tokens.enc';
    for (const keyFile of ['/data/key', '/data/tokens/keys/key', '/key'])
      await expect(loadStoreKey({ keyEnv: 'K', keyFile, dataFile })).rejects.toMatchObject({
        code: 'AUTH_STORE_KEY_BESIDE_DATA',
      });
    await expect(
      loadStoreKey({ keyEnv: 'K', keyFile: '/run/secrets/key', dataFile }),
    ).rejects.not.toMatchObject({ code: 'AUTH_STORE_KEY_BESIDE_DATA' });
  });

  it('refuses a key file that group or others can read, naming the chmod that fixes it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'key-'));
    const path = join(dir, 'token.key');
    await writeFile(path, randomBytes(32).toString('hex'), { mode: 0o640 });
    await chmod(path, 0o640);
    await expect(loadStoreKey({ keyEnv: 'K', keyFile: path })).rejects.toMatchObject({
      code: 'SECRET_FILE_TOO_OPEN',
      message: expect.stringContaining(`chmod 600 ${path}`) as unknown,
    });
  });

  it('refuses an all-zero or patterned key from the environment, without repeating it', async () => {
    for (const weak of [
      Buffer.alloc(32),
      Buffer.from('ab'.repeat(16)),
      Buffer.from('0123456789'.repeat(4).slice(0, 32)),
    ]) {
      const error = await loadStoreKey({ keyEnv: 'K' }, { K: weak.toString('base64') }).catch(
        (e: unknown) => e as Error,
      );
      expect(error).toMatchObject({ code: 'AUTH_STORE_KEY_WEAK' });
      expect((error as Error).message).not.toContain(weak.toString('base64'));
    }
  });
});

import { createHash, randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readFile, stat, writeFile, readdir } from 'node:fs/promises';
import { resolveClientSecret } from '../../../../src/auth/oauth-runtime.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StoreKey } from '../../../../src/auth/store/encryption.js';
import { FileBackend } from '../../../../src/auth/store/file-backend.js';
import { TokenStore, type GrantRecord } from '../../../../src/auth/store/token-store.js';

const record: GrantRecord = {
  grant: 'default',
  clientId: 'client-1',
  accessToken: 'at-SECRET-access-token-value',
  refreshToken: 'rt-SECRET-refresh-token-value',
  accessTokenExpiresAt: 1_700_000_000_000,
  obtainedAt: 1_699_964_000_000,
  scopes: ['read_phones'],
};

async function fileStore(key = new StoreKey(randomBytes(32))) {
  const dir = await mkdtemp(join(tmpdir(), 'token-store-'));
  const path = join(dir, 'nested', 'tokens.enc');
  return { path, dir, key, store: new TokenStore(new FileBackend({ path }), key) };
}

describe('TokenStore over the file backend', () => {
  it('reads back the grant it wrote', async () => {
    const { store } = await fileStore();
    await store.writeGrant(record);
    expect(await store.readGrant('default')).toEqual(record);
    expect(await store.readGrant('other')).toBeUndefined();
    expect(await store.listGrants()).toEqual(['default']);
  });

  it('writes the file with mode 0600 and leaves no temp file behind', async () => {
    const { store, path } = await fileStore();
    await store.writeGrant(record);
    await store.writeGrant({ ...record, accessToken: 'at-2' });
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await readdir(join(path, '..'))).toEqual(['tokens.enc']);
  });

  it('keeps no token in plain text in the file', async () => {
    const { store, path } = await fileStore();
    await store.writeGrant(record);
    const text = await readFile(path, 'utf8');
    expect(text).not.toContain('SECRET');
    expect(text).not.toContain('read_phones');
  });

  it('cannot be read with another key', async () => {
    const { store, path } = await fileStore();
    await store.writeGrant(record);
    const other = new TokenStore(new FileBackend({ path }), new StoreKey(randomBytes(32)));
    await expect(other.readGrant('default')).rejects.toMatchObject({ code: 'AUTH_STORE_KEY_MISMATCH' });
  });

  it('lets a login with a new key replace the grant of a store written with the old one (regression: lost or rotated key)', async () => {
    // docs/oauth.md: "Losing the key loses only the stored grant: create a new key and run `auth login` again".
    // The old key's sealed map of generations used to refuse every write with AUTH_STORE_KEY_MISMATCH.
    const { store, path, key: oldKey } = await fileStore();
    await store.writeGrant(record);
    await store.rememberState('state-of-the-old-key', pending);
    const newKey = new StoreKey(randomBytes(32));
    const renewed = new TokenStore(new FileBackend({ path }), newKey);
    await expect(renewed.readGrant('default')).rejects.toMatchObject({ code: 'AUTH_STORE_KEY_MISMATCH' });

    // What `auth login` does: remember a state, consume it, store the grant.
    await renewed.rememberState('state-of-the-new-key', pending);
    expect((await renewed.consumeState('state-of-the-new-key', 2000)).status).toBe('accepted');
    await renewed.writeGrant({ ...record, accessToken: 'at-new-key' });
    expect((await renewed.readGrant('default'))?.accessToken).toBe('at-new-key');
    // A fresh process with the new key reads it; the old key no longer does.
    const later = new TokenStore(new FileBackend({ path }), newKey);
    expect((await later.readGrant('default'))?.accessToken).toBe('at-new-key');
    await expect(
      new TokenStore(new FileBackend({ path }), oldKey).readGrant('default'),
    ).rejects.toMatchObject({ code: 'AUTH_STORE_KEY_MISMATCH' });
  });

  it('still refuses a write over a tampered map of generations', async () => {
    const { store, path } = await fileStore();
    await store.writeGrant(record);
    const document = JSON.parse(await readFile(path, 'utf8')) as { entries: Record<string, string> };
    const sealed = Buffer.from(document.entries['meta:generations'] ?? '', 'base64');
    sealed[sealed.length - 1] = (sealed[sealed.length - 1] ?? 0) ^ 1;
    document.entries['meta:generations'] = sealed.toString('base64');
    await writeFile(path, JSON.stringify(document), { mode: 0o600 });
    await expect(store.writeGrant(record)).rejects.toMatchObject({ code: 'AUTH_STORE_TAMPERED' });
  });

  it('detects a tampered file', async () => {
    const { store, path } = await fileStore();
    await store.writeGrant(record);
    const document = JSON.parse(await readFile(path, 'utf8')) as { entries: Record<string, string> };
    const bytes = Buffer.from(document.entries['grant:default']!, 'base64');
    bytes[bytes.length - 3]! ^= 0x20;
    document.entries['grant:default'] = bytes.toString('base64');
    await writeFile(path, JSON.stringify(document));
    await expect(store.readGrant('default')).rejects.toMatchObject({ code: 'AUTH_STORE_TAMPERED' });
  });

  it('refuses a file that is not a token store', async () => {
    const { store, path } = await fileStore();
    await store.writeGrant(record);
    await writeFile(path, '{"hello":1}');
    await expect(store.readGrant('default')).rejects.toMatchObject({ code: 'AUTH_STORE_CORRUPT' });
  });

  it('serializes concurrent writers so that no update is lost', async () => {
    const { store } = await fileStore();
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.writeGrant({ ...record, grant: `g${i}` })));
    expect((await store.listGrants()).sort()).toHaveLength(20);
  });

  it("two stores on one file (two processes) do not lose each other's entries", async () => {
    const { path, key, store } = await fileStore();
    const second = new TokenStore(new FileBackend({ path }), key);
    await Promise.all([
      ...Array.from({ length: 10 }, (_, i) => store.writeGrant({ ...record, grant: `a${i}` })),
      ...Array.from({ length: 10 }, (_, i) => second.writeGrant({ ...record, grant: `b${i}` })),
    ]);
    expect(await store.listGrants()).toHaveLength(20);
  });
});

const pending = {
  grant: 'default',
  redirectUri: 'https://127.0.0.1/cb',
  scopes: ['read_phones'],
  createdAt: 1000,
  expiresAt: 61_000,
};

describe('TokenStore authorization states', () => {
  it('accepts a remembered state once, then refuses it as reused', async () => {
    const { store } = await fileStore();
    await store.rememberState('abc123', pending);
    expect(await store.consumeState('abc123', 2000)).toEqual({ status: 'accepted', pending });
    expect(await store.consumeState('abc123', 3000)).toEqual({ status: 'reused' });
  });

  it('refuses an unknown state and an expired one', async () => {
    const { store } = await fileStore();
    await store.rememberState('abc123', pending);
    expect(await store.consumeState('zzz999', 2000)).toEqual({ status: 'unknown' });
    expect(await store.consumeState('abc123', 61_001)).toEqual({ status: 'expired' });
    expect(await store.consumeState('abc123', 61_002)).toEqual({ status: 'reused' });
  });

  it('does not write the state itself into the file', async () => {
    const { store, path } = await fileStore();
    await store.rememberState('StateValue123', pending);
    expect(await readFile(path, 'utf8')).not.toContain('StateValue123');
  });

  it('prunes long-dead states when a new one is remembered', async () => {
    const { store, path } = await fileStore();
    await store.rememberState('old1', pending);
    await store.rememberState('new1', {
      ...pending,
      createdAt: 2 * 86_400_000,
      expiresAt: 2 * 86_400_000 + 60_000,
    });
    const document = JSON.parse(await readFile(path, 'utf8')) as { entries: Record<string, string> };
    expect(Object.keys(document.entries).filter((name) => name.startsWith('state:'))).toHaveLength(1);
    expect(await store.consumeState('old1', 2 * 86_400_000)).toEqual({ status: 'unknown' });
  });
});

describe('TokenStore replay defence', () => {
  async function memoryStore() {
    const { MemoryBackend } = await import('../../../support/auth/memory-backend.js');
    const backend = new MemoryBackend();
    const key = new StoreKey(randomBytes(32));
    return { backend, key, store: new TokenStore(backend, key) };
  }

  it('refuses an old copy of a grant put back into the store (a retired refresh token)', async () => {
    const { backend, key, store } = await memoryStore();
    await store.writeGrant(record);
    const retired = backend.entries.get('grant:default');
    await store.writeGrant({ ...record, refreshToken: 'rt-rotated' });
    backend.entries.set('grant:default', retired ?? Buffer.alloc(0));
    await expect(new TokenStore(backend, key).readGrant('default')).rejects.toMatchObject({
      code: 'AUTH_STORE_REPLAYED',
    });
  });

  it('refuses an old copy of a state put back after it was used, instead of accepting it again', async () => {
    const { backend, key, store } = await memoryStore();
    await store.rememberState('s1', pending);
    const unused = backend.entries.get(stateName('s1'));
    expect(await store.consumeState('s1', pending.createdAt + 1)).toMatchObject({ status: 'accepted' });
    backend.entries.set(stateName('s1'), unused ?? Buffer.alloc(0));
    await expect(
      new TokenStore(backend, key).consumeState('s1', pending.createdAt + 2),
    ).rejects.toMatchObject({
      code: 'AUTH_STORE_REPLAYED',
    });
  });

  it('refuses, within a running process, a whole store restored from an old copy', async () => {
    const { backend, store } = await memoryStore();
    await store.writeGrant(record);
    const snapshot = new Map(backend.entries);
    await store.writeGrant({ ...record, refreshToken: 'rt-rotated' });
    expect(await store.readGrant('default')).toMatchObject({ refreshToken: 'rt-rotated' });
    for (const [name, value] of snapshot) backend.entries.set(name, value);
    await expect(store.readGrant('default')).rejects.toMatchObject({ code: 'AUTH_STORE_REPLAYED' });
  });
});

function stateName(state: string): string {
  return `state:${createHash('sha256').update(state, 'utf8').digest('hex')}`;
}

describe('secret files', () => {
  it('refuses a token store file that group or others can read', async () => {
    const { store, path } = await fileStore();
    await store.writeGrant(record);
    await chmod(path, 0o644);
    await expect(store.readGrant('default')).rejects.toMatchObject({ code: 'SECRET_FILE_TOO_OPEN' });
  });

  it('refuses a client secret file that group or others can read', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'secret-'));
    const path = join(dir, 'client-secret');
    await writeFile(path, 'client-secret-value\n', { mode: 0o600 });
    expect(await resolveClientSecret({ clientSecretFile: path })).toBe('client-secret-value');
    await chmod(path, 0o604);
    await expect(resolveClientSecret({ clientSecretFile: path })).rejects.toMatchObject({
      code: 'SECRET_FILE_TOO_OPEN',
    });
  });
});

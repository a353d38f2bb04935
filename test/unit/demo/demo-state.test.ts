/**
 * What a demo run owns in its folder (src/demo/demo-state.ts): every run starts afresh, whatever the last one
 * left, so its key and its token store always go together (issue 35: a second demo failed with
 * AUTH_STORE_KEY_MISMATCH because each run wrote a new key beside the last run's store).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StoreKey } from '../../../src/auth/store/encryption.js';
import { FileBackend } from '../../../src/auth/store/file-backend.js';
import { loadStoreKey } from '../../../src/auth/store/store-key.js';
import { TokenStore, type GrantRecord } from '../../../src/auth/store/token-store.js';
import { FatalError, RetriableError } from '../../../src/errors/index.js';
import {
  demoFiles,
  freshStateNotice,
  leftoverError,
  startFresh,
  type DemoFiles,
} from '../../../src/demo/demo-state.js';

const client = { clientId: 'calls-demo', clientSecret: 'secret-of-this-run', redirectUri: 'https://x/cb' };

const grant: GrantRecord = {
  grant: 'default',
  clientId: 'calls-demo',
  accessToken: 'at',
  refreshToken: 'rt',
  accessTokenExpiresAt: 2_000_000_000_000,
  obtainedAt: 1_999_000_000_000,
  scopes: ['read_phones'],
};

async function folder(): Promise<DemoFiles> {
  return demoFiles(await mkdtemp(join(tmpdir(), 'demo-state-')));
}

/** The token store as the demo's config opens it: the key from its key file, the store in its file. */
async function storeOf(files: DemoFiles): Promise<TokenStore> {
  const key = await loadStoreKey({ keyEnv: 'UNUSED', keyFile: files.keyFile, dataFile: files.storeFile }, {});
  // A lock left behind must not make the test wait: a short timeout turns it into an error at once.
  return new TokenStore(new FileBackend({ path: files.storeFile, lockTimeoutMs: 200 }), key);
}

describe('startFresh: each demo run owns its key and its store', () => {
  it('gives the second run a key that opens its store: the last run’s store, sealed with another key, is gone (regression)', async () => {
    const files = await folder();
    await startFresh(files, client);
    const first = await storeOf(files);
    await first.writeGrant(grant);
    await first.close();

    await startFresh(files, { ...client, clientSecret: 'secret-of-the-next-run' });
    const second = await storeOf(files);
    expect(await second.readGrant('default')).toBeUndefined();
    await second.writeGrant({ ...grant, accessToken: 'at-2' });
    expect((await second.readGrant('default'))?.accessToken).toBe('at-2');
    await second.close();
    expect((await readFile(files.secretFile, 'utf8')).trim()).toBe('secret-of-the-next-run');
  });

  it('starts clean after a kill -9 mid-start: key written but store not, a store of another key, its lock and a torn temporary file', async () => {
    const files = await folder();
    // What a killed run can leave: a store sealed with a key that is not the one in the key file, a fresh lock
    // (a store write was under way), and the temporary file of an interrupted key write.
    await mkdir(dirname(files.storeFile), { recursive: true });
    await mkdir(dirname(files.keyFile), { recursive: true });
    const other = new TokenStore(new FileBackend({ path: files.storeFile }), new StoreKey(randomBytes(32)));
    await other.writeGrant(grant);
    await writeFile(files.keyFile, randomBytes(32).toString('base64'), { mode: 0o600 });
    await writeFile(`${files.storeFile}.lock`, '12345');
    const torn = join(dirname(files.keyFile), '.token-store.key.12345.0123456789ab.tmp');
    await writeFile(torn, 'AbC', { mode: 0o600 });
    // Without a fresh start, the store would be refused (another key) or locked.
    const before = await storeOf(files);
    await expect(before.readGrant('default')).rejects.toMatchObject({ code: 'AUTH_STORE_KEY_MISMATCH' });
    await expect(before.writeGrant(grant)).rejects.toBeInstanceOf(RetriableError);

    await startFresh(files, client);
    const store = await storeOf(files);
    expect(await store.readGrant('default')).toBeUndefined();
    await store.writeGrant(grant);
    expect(await store.listGrants()).toEqual(['default']);
    expect(await readdir(dirname(files.keyFile))).toEqual(
      expect.not.arrayContaining([expect.stringMatching(/\.tmp$/)]),
    );
  });

  it('writes the key, the client secret and the client file whole and private (0600)', async () => {
    const files = await folder();
    await startFresh(files, client);
    for (const file of [files.keyFile, files.secretFile, files.clientFile])
      expect((await stat(file)).mode & 0o777, file).toBe(0o600);
    expect(JSON.parse(await readFile(files.clientFile, 'utf8'))).toEqual(client);
    expect(Buffer.from(await readFile(files.keyFile, 'utf8'), 'base64')).toHaveLength(32);
    expect(await readdir(dirname(files.keyFile))).toHaveLength(3);
  });

  it('removes the last run’s config and sandbox files, which name its sandbox and key', async () => {
    const files = await folder();
    await startFresh(files, client);
    for (const file of [files.configFile, files.certFile, files.certKeyFile, files.locationsFile])
      await writeFile(file, 'of the last run');
    await startFresh(files, client);
    for (const file of [files.configFile, files.certFile, files.certKeyFile, files.locationsFile])
      await expect(stat(file), file).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('freshStateNotice', () => {
  it('says in the first lines where the files are and that each run starts afresh', () => {
    const text = freshStateNotice(demoFiles('/home/ann/.calls-connector/demo'));
    expect(text.split('\n')[0]).toBe('calls-connector demo: files in /home/ann/.calls-connector/demo');
    expect(text).toMatch(/Each run starts afresh there: a new sandbox, token-store key, encrypted tokens/);
  });
});

describe('leftoverError', () => {
  const files = demoFiles('/tmp/my demo');

  it('turns a token-store error into one that names the command clearing the demo’s folder, not `auth login`', () => {
    const cause = new FatalError('AUTH_STORE_KEY_MISMATCH', 'run `calls-connector auth login` again');
    const error = leftoverError(cause, files);
    expect(error).toMatchObject({ code: 'DEMO_FOLDER_UNUSABLE', cause });
    expect((error as Error).message).toContain("`rm -rf '/tmp/my demo'`");
    expect((error as Error).message).not.toContain('auth login');
  });

  it('passes any other error on as it is', () => {
    const other = new FatalError('DEVSTACK_UNAVAILABLE', 'no stack');
    expect(leftoverError(other, files)).toBe(other);
    const plain = new Error('boom');
    expect(leftoverError(plain, files)).toBe(plain);
  });
});

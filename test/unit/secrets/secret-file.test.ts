import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readPrivateFile } from '../../../src/secrets/secret-file.js';

describe.runIf(process.platform !== 'win32')('readPrivateFile', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'secret-file-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads a file only its owner may read or write', async () => {
    const path = join(dir, 'secret');
    await writeFile(path, 's3cr3t\n', { mode: 0o600 });
    expect(await readPrivateFile(path, 'the test secret')).toBe('s3cr3t\n');
  });

  it('refuses a file its group or others may read, naming the key and the chmod, never the secret', async () => {
    const path = join(dir, 'secret');
    await writeFile(path, 's3cr3t\n', { mode: 0o600 });
    await chmod(path, 0o640);
    const refused = await readPrivateFile(path, 'webhooks.tls.keyFile').catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'SECRET_FILE_TOO_OPEN' });
    expect((refused as Error).message).toContain('webhooks.tls.keyFile');
    expect((refused as Error).message).toContain(`chmod 600 ${path}`);
    expect((refused as Error).message).not.toContain('s3cr3t');
  });

  it('passes a read error on as it is, for the caller to name', async () => {
    await expect(readPrivateFile(join(dir, 'missing'), 'oauth.keyFile')).rejects.toMatchObject({
      code: 'ENOENT',
    });
  });
});

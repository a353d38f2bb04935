import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readTlsFiles } from '../../../src/webhooks/tls-files.js';

describe('readTlsFiles', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'webhook-tls-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads the certificate chain and the private key as PEM text', async () => {
    await writeFile(join(dir, 'cert.pem'), 'CERT', { mode: 0o644 });
    await writeFile(join(dir, 'key.pem'), 'KEY', { mode: 0o600 });
    expect(await readTlsFiles({ certFile: join(dir, 'cert.pem'), keyFile: join(dir, 'key.pem') })).toEqual({
      cert: 'CERT',
      key: 'KEY',
    });
  });

  it('fails the start naming the keys to fix when a file cannot be read', async () => {
    const error = await readTlsFiles({
      certFile: join(dir, 'missing.pem'),
      keyFile: join(dir, 'key.pem'),
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'WEBHOOK_LISTEN_FAILED' });
    expect((error as Error).message).toContain('ENOENT');
  });

  it.runIf(process.platform !== 'win32')('refuses a private key others may read', async () => {
    await writeFile(join(dir, 'cert.pem'), 'CERT', { mode: 0o644 });
    await writeFile(join(dir, 'key.pem'), 'KEY', { mode: 0o644 });
    await expect(
      readTlsFiles({ certFile: join(dir, 'cert.pem'), keyFile: join(dir, 'key.pem') }),
    ).rejects.toMatchObject({ code: 'SECRET_FILE_TOO_OPEN' });
  });
});

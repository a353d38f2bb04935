/**
 * Transport (issue 3, deliverable 1): HTTPS with a generated certificate written where asked, a given
 * certificate, or plain HTTP only when asked.
 */
import { mkdtemp, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { describe, expect, it } from 'vitest';
import { startSandbox } from '../../src/index.js';
import { loadOrGenerateTls } from '../../src/tls.js';

const tiny = { seed: 1, locations: 1, callsPerLocation: 1 };

async function status(url: string, ca?: string): Promise<number> {
  const agent = new Agent({ connect: ca === undefined ? {} : { ca } });
  try {
    const res = await request(url, { dispatcher: agent });
    await res.body.dump();
    return res.statusCode;
  } finally {
    await agent.close();
  }
}

describe('sandbox transport', () => {
  it('writes the generated certificate to certOutFile, valid for 127.0.0.1 and localhost', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandbox-tls-'));
    const certOutFile = join(dir, 'ca.pem');
    const sandbox = await startSandbox({ certOutFile, data: tiny });
    try {
      expect(sandbox.caFile).toBe(certOutFile);
      const pem = await readFile(certOutFile, 'utf8');
      expect(pem).toBe(sandbox.caCertPem);
      expect(await status(`${sandbox.baseUrl}/_sandbox/stats`, pem)).toBe(200);
      const port = new URL(sandbox.baseUrl).port;
      expect(await status(`https://localhost:${port}/_sandbox/stats`, pem)).toBe(200);
    } finally {
      await sandbox.close();
    }
  });

  it('is refused by a client that does not trust its certificate', async () => {
    const sandbox = await startSandbox({ data: tiny });
    try {
      await expect(status(`${sandbox.baseUrl}/_sandbox/stats`)).rejects.toThrow();
    } finally {
      await sandbox.close();
    }
  });

  it('serves a certificate given by path', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandbox-tls-'));
    const material = await loadOrGenerateTls({ host: '127.0.0.1' });
    const certFile = join(dir, 'cert.pem');
    const keyFile = join(dir, 'key.pem');
    await writeFile(certFile, material.cert);
    await writeFile(keyFile, material.key);
    const sandbox = await startSandbox({ tls: { certFile, keyFile }, data: tiny });
    try {
      expect(sandbox.caCertPem).toBe(material.cert);
      expect(await status(`${sandbox.baseUrl}/_sandbox/stats`, material.cert)).toBe(200);
    } finally {
      await sandbox.close();
    }
  });

  it('creates the certificate files when missing and serves the same certificate after a restart', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandbox-tls-'));
    const tls = { certFile: join(dir, 'cert.pem'), keyFile: join(dir, 'key.pem'), createIfMissing: true };
    const first = await startSandbox({ tls, data: tiny });
    const pem = await readFile(tls.certFile, 'utf8');
    await first.close();
    expect((await stat(tls.keyFile)).mode & 0o777).toBe(0o600);
    const again = await startSandbox({ tls, data: tiny });
    try {
      expect(again.caCertPem).toBe(pem);
      expect(await status(`${again.baseUrl}/_sandbox/stats`, pem)).toBe(200);
    } finally {
      await again.close();
    }
  });

  it('leaves a given certificate file as it is when it is also certOutFile', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandbox-tls-'));
    const material = await loadOrGenerateTls({ host: '127.0.0.1' });
    const tls = { certFile: join(dir, 'cert.pem'), keyFile: join(dir, 'key.pem') };
    await writeFile(tls.certFile, material.cert);
    await writeFile(tls.keyFile, material.key);
    const before = new Date('2026-01-01T00:00:00Z');
    await utimes(tls.certFile, before, before);
    const sandbox = await startSandbox({ tls, certOutFile: tls.certFile, data: tiny });
    try {
      expect(sandbox.caFile).toBe(tls.certFile);
      expect((await stat(tls.certFile)).mtime).toEqual(before);
    } finally {
      await sandbox.close();
    }
  });

  it('creates the folder of certOutFile', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandbox-tls-'));
    const certOutFile = join(dir, '.calls-connector', 'sandbox-ca.pem');
    const sandbox = await startSandbox({ certOutFile, data: tiny });
    try {
      expect(await readFile(certOutFile, 'utf8')).toBe(sandbox.caCertPem);
    } finally {
      await sandbox.close();
    }
  });

  it('speaks plain HTTP only when tls is false, with no CA', async () => {
    const sandbox = await startSandbox({ tls: false, data: tiny });
    try {
      expect(sandbox.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(sandbox.caFile).toBeNull();
      expect(sandbox.caCertPem).toBeNull();
      expect(await status(`${sandbox.baseUrl}/_sandbox/stats`)).toBe(200);
    } finally {
      await sandbox.close();
    }
  });

  it('fails to start on a port already in use, with the system error code', async () => {
    const first = await startSandbox({ data: tiny });
    try {
      const port = Number(new URL(first.baseUrl).port);
      await expect(startSandbox({ port, data: tiny })).rejects.toMatchObject({ code: 'EADDRINUSE' });
    } finally {
      await first.close();
    }
  });

  it('refuses a registered redirect_uri that is not HTTPS', async () => {
    await expect(
      startSandbox({ client: { redirectUri: 'http://127.0.0.1/cb' }, data: tiny }),
    ).rejects.toThrow(/https/);
  });
});

/**
 * The sandbox's TLS material: a certificate given by path, or one generated at start.
 *
 * Generated: a self-signed certificate (src/tls) for 127.0.0.1, ::1 and localhost (plus the bind host), marked as
 * a CA so that clients can trust it directly as their CA file.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { generateSelfSigned } from '../../../src/tls/self-signed.js';

export interface TlsMaterial {
  cert: string;
  key: string;
  /** The PEM clients should trust (the generated certificate itself; the given cert file otherwise). */
  caPem: string;
}

export async function loadOrGenerateTls(opts: {
  certFile?: string;
  keyFile?: string;
  host: string;
}): Promise<TlsMaterial> {
  if (opts.certFile !== undefined || opts.keyFile !== undefined) {
    if (opts.certFile === undefined || opts.keyFile === undefined)
      throw new RangeError('tls needs both certFile and keyFile');
    const [cert, key] = await Promise.all([readFile(opts.certFile, 'utf8'), readFile(opts.keyFile, 'utf8')]);
    return { cert, key, caPem: cert };
  }
  const hosts = ['localhost', '127.0.0.1', '::1'];
  if (!['127.0.0.1', 'localhost', '::1', '0.0.0.0'].includes(opts.host)) hosts.push(opts.host);
  const { cert, key } = await generateSelfSigned({
    commonName: 'calls-connector sandbox',
    hosts,
    validityMs: 30 * 24 * 3600_000,
    ca: true,
  });
  return { cert, key, caPem: cert };
}

export async function writeCaFile(path: string, pem: string): Promise<void> {
  await writeFile(path, pem, { mode: 0o644 });
}

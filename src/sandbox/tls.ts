/**
 * The sandbox's TLS material: a certificate given by path, or one generated at start.
 *
 * Generated: an ECDSA P-256 self-signed certificate (fast to make, unlike RSA) for 127.0.0.1, ::1 and
 * localhost, marked as a CA so that clients can trust it directly as their CA file. Made with `selfsigned`
 * (which uses Node's WebCrypto through @peculiar/x509): Node has no X.509 writer of its own, and shelling
 * out to openssl would make it a runtime dependency.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { generate } from 'selfsigned';

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
  const now = new Date();
  const altNames: { type: 2 | 7; value?: string; ip?: string }[] = [
    { type: 2, value: 'localhost' },
    { type: 7, ip: '127.0.0.1' },
    { type: 7, ip: '::1' },
  ];
  if (
    opts.host !== '127.0.0.1' &&
    opts.host !== 'localhost' &&
    opts.host !== '::1' &&
    opts.host !== '0.0.0.0'
  ) {
    altNames.push(/^[\d.]+$|:/.test(opts.host) ? { type: 7, ip: opts.host } : { type: 2, value: opts.host });
  }
  const pems = await generate([{ name: 'commonName', value: 'calls-connector sandbox' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: new Date(now.getTime() - 3600_000),
    notAfterDate: new Date(now.getTime() + 30 * 24 * 3600_000),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', digitalSignature: true, keyCertSign: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames },
    ],
  });
  return { cert: pems.cert, key: pems.private, caPem: pems.cert };
}

export async function writeCaFile(path: string, pem: string): Promise<void> {
  await writeFile(path, pem, { mode: 0o644 });
}

/**
 * The sandbox's TLS material: a certificate given by path, or one generated at start (and, with
 * `createIfMissing`, kept in the given files so that a restart serves the certificate clients already trust).
 *
 * Generated: a self-signed certificate (@calls-connector/self-signed) for 127.0.0.1, ::1 and localhost (plus the bind host), marked as
 * a CA so that clients can trust it directly as their CA file.
 */
import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { generateSelfSigned } from '@calls-connector/self-signed';

export interface TlsMaterial {
  cert: string;
  key: string;
  /** The PEM clients should trust (the generated certificate itself; the given cert file otherwise). */
  caPem: string;
}

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

export async function loadOrGenerateTls(opts: {
  certFile?: string;
  keyFile?: string;
  /** With certFile and keyFile: when neither exists, generate the pair and write it there (key mode 0600). */
  createIfMissing?: boolean;
  host: string;
}): Promise<TlsMaterial> {
  if (opts.certFile !== undefined || opts.keyFile !== undefined) {
    if (opts.certFile === undefined || opts.keyFile === undefined)
      throw new RangeError('tls needs both certFile and keyFile');
    if (opts.createIfMissing && !(await exists(opts.certFile)) && !(await exists(opts.keyFile))) {
      const generated = await generateTls(opts.host);
      // 'wx': never overwrite a pair another process wrote meanwhile.
      await writeFile(opts.keyFile, generated.key, { mode: 0o600, flag: 'wx' });
      await writeFile(opts.certFile, generated.cert, { mode: 0o644, flag: 'wx' });
      return generated;
    }
    // One after the other: with both files missing, the error always names the certificate. Read together, it
    // named whichever read failed first (a flaky CLI test, test/component/cli/bad-input.test.ts).
    const cert = await readFile(opts.certFile, 'utf8');
    const key = await readFile(opts.keyFile, 'utf8');
    return { cert, key, caPem: cert };
  }
  return generateTls(opts.host);
}

async function generateTls(host: string): Promise<TlsMaterial> {
  const hosts = ['localhost', '127.0.0.1', '::1'];
  if (!['127.0.0.1', 'localhost', '::1', '0.0.0.0'].includes(host)) hosts.push(host);
  const { cert, key } = await generateSelfSigned({
    commonName: 'calls-connector sandbox',
    hosts,
    validityMs: 30 * 24 * 3600_000,
    ca: true,
  });
  return { cert, key, caPem: cert };
}

/** Writes the PEM clients should trust, creating its folder (the CLI's default is under `.calls-connector/`). */
export async function writeCaFile(path: string, pem: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, pem, { mode: 0o644 });
}

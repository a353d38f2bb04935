/**
 * The receiver's certificate chain and private key (`webhooks.tls.certFile`, `keyFile`), read at start. The key
 * file is a secret: refused when others may read it (secrets/secret-file.ts). A file that cannot be read fails
 * the start with FatalError WEBHOOK_LISTEN_FAILED naming the keys to fix (the receiver cannot listen without
 * them).
 */
import { readFile } from 'node:fs/promises';
import { FatalError } from '../errors/index.js';
import { readPrivateFile } from '../secrets/secret-file.js';

/** PEM, as node:https takes them. */
export interface TlsPem {
  cert: string;
  key: string;
}

export async function readTlsFiles(tls: { certFile: string; keyFile: string }): Promise<TlsPem> {
  try {
    return {
      cert: await readFile(tls.certFile, 'utf8'),
      key: await readPrivateFile(tls.keyFile, 'webhooks.tls.keyFile'),
    };
  } catch (error) {
    if (error instanceof FatalError) throw error;
    throw new FatalError(
      'WEBHOOK_LISTEN_FAILED',
      `cannot read webhooks.tls.certFile or keyFile (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
      { cause: error },
    );
  }
}

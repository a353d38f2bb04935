/**
 * Reads a file that holds a secret (the token-store key, a client secret, the token store itself, webhook
 * signing secrets, a TLS key) the way ssh reads a private key: refused when its group or others may read or
 * write it, because then the secret is no longer the service account's alone. The mode is checked on the open file (fstat), so the
 * file checked is the file read.
 *
 * POSIX only: on Windows, modes do not describe access (ACLs do) and the check is skipped.
 */
import { open } from 'node:fs/promises';
import { FatalError } from '../errors/index.js';

/** Group and other permission bits. */
const SHARED_BITS = 0o077;

/**
 * The file's text. Throws FatalError SECRET_FILE_TOO_OPEN when group/other bits are set (naming the
 * `chmod` that fixes it); read errors (ENOENT…) are passed on as they are, for the caller to name.
 */
export async function readPrivateFile(path: string, what: string): Promise<string> {
  const handle = await open(path, 'r');
  try {
    const { mode } = await handle.stat();
    if (process.platform !== 'win32' && (mode & SHARED_BITS) !== 0) {
      throw new FatalError(
        'SECRET_FILE_TOO_OPEN',
        `${what} (${path}) is readable or writable by group or others (mode ${(mode & 0o777).toString(8)}); ` +
          `run \`chmod 600 ${path}\` (and make the service account its owner)`,
      );
    }
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}

/**
 * Where the token-store key comes from: a key file (`oauth.keyFile`) if configured, else the environment
 * variable named by `oauth.keyEnv`. The key is 32 bytes written as 64 hex digits or as base64 (standard or
 * URL-safe). It is never stored beside the data it protects: a key file in the token file's directory, in a
 * folder above it or below it is refused. A key file group/other may read is refused (see secrets/secret-file.ts),
 * and so is a key that is not random-looking (all zeros, a repeated pattern: fewer than 16 distinct bytes,
 * which 32 random bytes practically never have).
 *
 * Errors name the variable or file and what to do; they never contain the key or any part of it.
 */
import { dirname, relative, resolve, isAbsolute } from 'node:path';
import { FatalError } from '../../errors/index.js';
import { StoreKey } from './encryption.js';
import { readPrivateFile } from '../../secrets/secret-file.js';

export interface StoreKeySource {
  keyEnv: string;
  keyFile?: string | undefined;
  /** Path of the file backend's data, to refuse a key kept in the same directory. */
  dataFile?: string | undefined;
}

/** Decodes 32 bytes from hex or base64 text; undefined when the text is neither. */
export function decodeKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Buffer.from(trimmed, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}={0,1}$/.test(trimmed)) {
    const bytes = Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (bytes.length === 32) return bytes;
  }
  return undefined;
}

const HOW_TO_MAKE =
  'generate one with `openssl rand -base64 32` (or `node -e "console.log(crypto.randomBytes(32).toString(\'base64\'))"`)';

export async function loadStoreKey(
  source: StoreKeySource,
  env: NodeJS.ProcessEnv = process.env,
): Promise<StoreKey> {
  if (source.keyFile !== undefined) {
    const keyPath = resolve(source.keyFile);
    if (source.dataFile !== undefined && sameTree(dirname(keyPath), dirname(resolve(source.dataFile)))) {
      throw new FatalError(
        'AUTH_STORE_KEY_BESIDE_DATA',
        `oauth.keyFile (${source.keyFile}) is in the token store's directory (${source.dataFile}) or one above or below it; ` +
          'keep the key elsewhere (e.g. a secrets mount) so a copy of the data directory does not carry its key',
      );
    }
    let text: string;
    try {
      text = await readPrivateFile(keyPath, 'oauth.keyFile');
    } catch (error) {
      if (error instanceof FatalError) throw error;
      const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
      throw new FatalError('AUTH_STORE_KEY_MISSING', `cannot read oauth.keyFile ${source.keyFile}: ${code}`, {
        cause: error,
      });
    }
    const key = decodeKey(text);
    if (key === undefined) {
      throw new FatalError(
        'AUTH_STORE_KEY_INVALID',
        `oauth.keyFile ${source.keyFile} does not hold a 32-byte key as 64 hex digits or base64; ${HOW_TO_MAKE}`,
      );
    }
    return checkedKey(key, `oauth.keyFile ${source.keyFile}`);
  }
  const text = env[source.keyEnv];
  if (text === undefined || text.trim() === '') {
    throw new FatalError(
      'AUTH_STORE_KEY_MISSING',
      `the token store needs an encryption key: set the environment variable ${source.keyEnv} or oauth.keyFile; ${HOW_TO_MAKE}`,
    );
  }
  const key = decodeKey(text);
  if (key === undefined) {
    throw new FatalError(
      'AUTH_STORE_KEY_INVALID',
      `the environment variable ${source.keyEnv} does not hold a 32-byte key as 64 hex digits or base64; ${HOW_TO_MAKE}`,
    );
  }
  return checkedKey(key, `the environment variable ${source.keyEnv}`);
}

/** Fewest distinct byte values a key may have; 32 random bytes have about 30. */
const MIN_DISTINCT_BYTES = 16;

function checkedKey(key: Buffer, where: string): StoreKey {
  if (new Set(key).size < MIN_DISTINCT_BYTES) {
    throw new FatalError(
      'AUTH_STORE_KEY_WEAK',
      `${where} holds a key that is not random (all zeros or a repeated pattern); ${HOW_TO_MAKE}`,
    );
  }
  return new StoreKey(key);
}

/** Whether one folder is the other or contains it. */
function sameTree(a: string, b: string): boolean {
  const within = (inner: string, outer: string): boolean => {
    const path = relative(outer, inner);
    return path === '' || (!path.startsWith('..') && !isAbsolute(path));
  };
  return within(a, b) || within(b, a);
}

/**
 * Authenticated encryption of token-store entries: AES-256-GCM (node:crypto), one fresh 96-bit IV per write.
 *
 * Sealed layout (binary, then base64 where text is needed):
 *   version (1 byte = 2) | key id (8 bytes) | generation (8 bytes, big-endian) | iv (12) | tag (16) | ciphertext
 * Version 1 (no generation field; read as generation 0) is still opened, so stores written before stay usable.
 *
 * The generation (a counter the token store raises on every write, see token-store.ts) is in the clear so
 * it can be bound into the AAD before opening; a sealed value with its generation changed fails to open,
 * so an old entry cannot be passed off as a newer one.
 *
 * The entry's name (e.g. `grant:default`) is bound in as additional authenticated data, so a sealed value
 * copied under another name fails to open just as a modified one does. The key id (an HMAC of a fixed label
 * under the key, revealing nothing about it) lets us tell "written with another key" apart from "tampered".
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { FatalError } from '../../errors/index.js';

const VERSION = 2;
const LEGACY_VERSION = 1;
const KEY_ID_BYTES = 8;
const GENERATION_BYTES = 8;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Bytes before the IV: version, key id and (version 2) the generation. */
function prefixBytes(version: number): number {
  return 1 + KEY_ID_BYTES + (version === LEGACY_VERSION ? 0 : GENERATION_BYTES);
}

/** The generation a sealed value claims (0 for version 1), without opening it; undefined when unreadable. */
export function sealedGeneration(sealed: Buffer): number | undefined {
  if (sealed.length < 1) return undefined;
  if (sealed[0] === LEGACY_VERSION) return 0;
  if (sealed[0] !== VERSION || sealed.length < prefixBytes(VERSION)) return undefined;
  return Number(sealed.readBigUInt64BE(1 + KEY_ID_BYTES));
}

/** What open() returns besides the plaintext. */
export interface Opened {
  plaintext: Buffer;
  generation: number;
}

/** A 32-byte AES key with its public identifier. Never logged, never serialized. */
export class StoreKey {
  readonly id: string;
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new TypeError(`a token-store key is 32 bytes, got ${key.length}`);
    this.#key = Buffer.from(key);
    this.id = createHmac('sha256', this.#key)
      .update('calls-connector token-store key id')
      .digest()
      .subarray(0, KEY_ID_BYTES)
      .toString('hex');
  }

  /** Encrypts `plaintext` for the entry `name` at `generation` (a non-negative safe integer). */
  seal(name: string, plaintext: Buffer, generation = 0): Buffer {
    if (!Number.isSafeInteger(generation) || generation < 0)
      throw new TypeError(`a token-store generation is a non-negative integer, got ${generation}`);
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(aad(VERSION, name, generation));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    const generationBytes = Buffer.alloc(GENERATION_BYTES);
    generationBytes.writeBigUInt64BE(BigInt(generation));
    return Buffer.concat([
      Buffer.from([VERSION]),
      Buffer.from(this.id, 'hex'),
      generationBytes,
      iv,
      cipher.getAuthTag(),
      ciphertext,
    ]);
  }

  /**
   * Decrypts what `seal(name, ...)` produced. Throws FatalError AUTH_STORE_KEY_MISMATCH when the entry was
   * written under another key, AUTH_STORE_TAMPERED when it was modified, truncated or moved to another name.
   */
  open(name: string, sealed: Buffer): Buffer {
    return this.openWithGeneration(name, sealed).plaintext;
  }

  /** Like open, and says the generation the value was sealed at (authenticated: it is in the AAD). */
  openWithGeneration(name: string, sealed: Buffer): Opened {
    const version = sealed[0];
    const generation = sealedGeneration(sealed);
    if (
      version === undefined ||
      generation === undefined ||
      sealed.length < prefixBytes(version) + IV_BYTES + TAG_BYTES
    ) {
      throw new FatalError(
        'AUTH_STORE_TAMPERED',
        `token-store entry "${name}" is not in a known format (truncated or modified)`,
      );
    }
    const keyId = sealed.subarray(1, 1 + KEY_ID_BYTES).toString('hex');
    if (keyId !== this.id) {
      throw new FatalError(
        'AUTH_STORE_KEY_MISMATCH',
        `token-store entry "${name}" was encrypted with another key (key id ${keyId}, configured key id ${this.id}); ` +
          'configure the key it was written with, or run `calls-connector auth login` again to replace it',
      );
    }
    const ivAt = prefixBytes(version);
    const iv = sealed.subarray(ivAt, ivAt + IV_BYTES);
    const tag = sealed.subarray(ivAt + IV_BYTES, ivAt + IV_BYTES + TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', this.#key, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(aad(version, name, generation));
    decipher.setAuthTag(tag);
    try {
      const plaintext = Buffer.concat([
        decipher.update(sealed.subarray(ivAt + IV_BYTES + TAG_BYTES)),
        decipher.final(),
      ]);
      return { plaintext, generation };
    } catch (error) {
      throw new FatalError(
        'AUTH_STORE_TAMPERED',
        `token-store entry "${name}" failed authentication: it was modified after it was written`,
        { cause: error },
      );
    }
  }

  /** Keeps the key out of console.log / util.inspect / JSON. */
  toJSON(): string {
    return `StoreKey(${this.id})`;
  }
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.toJSON();
  }
}

function aad(version: number, name: string, generation: number): Buffer {
  const text =
    version === LEGACY_VERSION
      ? `calls-connector token-store v1:${name}`
      : `calls-connector token-store v${version}:${name}:${generation}`;
  return Buffer.from(text, 'utf8');
}

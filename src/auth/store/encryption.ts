/**
 * Authenticated encryption of token-store entries: AES-256-GCM (node:crypto), one fresh 96-bit IV per write.
 *
 * Sealed layout (binary, then base64 where text is needed):
 *   version (1 byte = 1) | key id (8 bytes) | iv (12 bytes) | tag (16 bytes) | ciphertext
 *
 * The entry's name (e.g. `grant:default`) is bound in as additional authenticated data, so a sealed value
 * copied under another name fails to open just as a modified one does. The key id (an HMAC of a fixed label
 * under the key, revealing nothing about it) lets us tell "written with another key" apart from "tampered".
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { FatalError } from '../../errors/index.js';

const VERSION = 1;
const KEY_ID_BYTES = 8;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + KEY_ID_BYTES + IV_BYTES + TAG_BYTES;

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

  /** Encrypts `plaintext` for the entry `name`. */
  seal(name: string, plaintext: Buffer): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(aad(name));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return Buffer.concat([
      Buffer.from([VERSION]),
      Buffer.from(this.id, 'hex'),
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
    if (sealed.length < HEADER_BYTES || sealed[0] !== VERSION) {
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
    const iv = sealed.subarray(1 + KEY_ID_BYTES, 1 + KEY_ID_BYTES + IV_BYTES);
    const tag = sealed.subarray(1 + KEY_ID_BYTES + IV_BYTES, HEADER_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', this.#key, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(aad(name));
    decipher.setAuthTag(tag);
    try {
      return Buffer.concat([decipher.update(sealed.subarray(HEADER_BYTES)), decipher.final()]);
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

function aad(name: string): Buffer {
  return Buffer.from(`calls-connector token-store v${VERSION}:${name}`, 'utf8');
}

/**
 * The fingerprint of a listed record: a short keyed digest of the fields the listing gave for it, so the
 * boundary (traversal.ts) can tell a second change within one updatedAt value from the version already
 * published. Stable across processes and releases for one key: the fields are digested in sorted key
 * order, so a re-listing of the same version gives the same fingerprint.
 *
 * Keyed (HMAC-SHA-256), not a plain hash, because the listed fields include the customer's number and the
 * fingerprints are stored in the offsets topic: a customer number has about 10^10 possible values, and the
 * other fields of a call can be read from the calls topic, so a plain hash could be reversed by trying every
 * number, and the offsets topic would leak the number of a private call that the calls topic redacts.
 * Without the key, a fingerprint says nothing. The key is derived from a secret every instance of one
 * connector already shares (the OAuth client secret; the static token in development), never stored.
 * A changed secret changes every fingerprint: each location then publishes its boundary records once more
 * (the boundary rule's safe direction, duplicates never loss), as after the version-2 upgrade.
 *
 * The last fingerprint of each call (by uid, with the text it was made from) is remembered, up to
 * REMEMBERED_CALLS calls: an idle poll lists its boundary call again (`since` is inclusive), and its
 * fingerprint is then a lookup, not an HMAC. A call whose fields changed has a new text and a new HMAC.
 *
 * 96 bits (base64url, 16 characters): collisions between two versions of one call are not a practical
 * concern, and the offsets record stays small (poll.boundaryCap entries).
 */
import { createHmac, createSecretKey, hkdfSync, type KeyObject } from 'node:crypto';

const FINGERPRINT_BYTES = 12;
/** Domain separation: this key is used for nothing else, whatever else the secret serves. */
const KEY_SALT = 'calls-connector';
const KEY_INFO = 'boundary fingerprint v1';
/**
 * How many calls' last fingerprints are remembered (the least recently used forgotten first): one boundary
 * call per location at 10,000 locations; a few MiB at most (the listed fields' text of each).
 */
export const REMEMBERED_CALLS = 10_000;

interface Remembered {
  uid: string;
  text: string;
  fingerprint: string;
}

export class BoundaryFingerprints {
  /**
   * A KeyObject, not the raw bytes: createHmac imports a Buffer key into a new KeyObject on every call,
   * which cost 17 µs per fingerprint (6.6 % of a backfill's CPU in the profile) against 3.4 µs.
   */
  readonly #key: KeyObject;

  /** Each call's last fingerprint by uid, in order of last use (a Map keeps insertion order). */
  readonly #remembered = new Map<string, Remembered>();

  private constructor(key: KeyObject) {
    this.#key = key;
  }

  /**
   * Fingerprints under a key derived (HKDF-SHA-256) from `secret`. Called once at start by the runtime, with
   * a secret that is the same on every instance of the connector, so that an instance taking a location
   * over recognises the boundary the previous one stored.
   */
  static fromSecret(secret: string): BoundaryFingerprints {
    if (secret.length === 0) throw new TypeError('the boundary fingerprint secret must not be empty');
    return new BoundaryFingerprints(
      createSecretKey(Buffer.from(hkdfSync('sha256', secret, KEY_SALT, KEY_INFO, 32))),
    );
  }

  /**
   * Fingerprint of a listed record's fields (strings, numbers, booleans, null), updatedAt left out: the
   * boundary compares fingerprints only at one instant, and one instant may be spelled with another
   * precision or offset from one listing to the next.
   */
  fields(fields: Readonly<Record<string, unknown>>): string {
    const keys = Object.keys(fields)
      .filter((key) => key !== 'updatedAt')
      .sort();
    const text = JSON.stringify(keys.map((key) => [key, fields[key] ?? null]));
    const uid = fields['uid'];
    if (typeof uid !== 'string') return this.text(text);
    const remembered = this.#remembered.get(uid);
    if (remembered !== undefined) this.#remembered.delete(uid);
    if (remembered?.text === text) {
      // Moved to the most recent, as it was: the entry (its uid and text) already held, not this listing's copies,
      // which then die young instead of living until the next idle poll.
      this.#remembered.set(remembered.uid, remembered);
      return remembered.fingerprint;
    }
    const fingerprint = this.text(text);
    this.#remembered.set(uid, { uid, text, fingerprint });
    if (this.#remembered.size > REMEMBERED_CALLS) {
      const oldest = this.#remembered.keys().next();
      if (oldest.done !== true) this.#remembered.delete(oldest.value);
    }
    return fingerprint;
  }

  /** Fingerprint of a text (e.g. the payload of a listed item that could not be mapped). */
  text(text: string): string {
    return createHmac('sha256', this.#key)
      .update(text)
      .digest()
      .subarray(0, FINGERPRINT_BYTES)
      .toString('base64url');
  }
}

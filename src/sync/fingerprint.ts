/**
 * The fingerprint of a listed record: a short digest of the fields the listing gave for it, so the
 * boundary (traversal.ts) can tell a second change within one updatedAt value from the version already
 * published. Pure and stable across processes and releases: the fields are hashed in sorted key order,
 * so a re-listing of the same version gives the same fingerprint.
 *
 * 96 bits of SHA-256, base64url (16 characters): collisions between two versions of one call are not a
 * practical concern, and the offsets record stays small (poll.boundaryCap entries).
 */
import { hash } from 'node:crypto';

const FINGERPRINT_BYTES = 12;

/**
 * Fingerprint of a listed record's fields (strings, numbers, booleans, null), updatedAt left out: the
 * boundary compares fingerprints only at one instant, and one instant may be spelled with another
 * precision or offset from one listing to the next.
 */
export function fingerprintFields(fields: Readonly<Record<string, unknown>>): string {
  const keys = Object.keys(fields)
    .filter((key) => key !== 'updatedAt')
    .sort();
  return fingerprintText(JSON.stringify(keys.map((key) => [key, fields[key] ?? null])));
}

/** Fingerprint of a text (e.g. the payload of a listed item that could not be mapped). */
export function fingerprintText(text: string): string {
  // The one-shot crypto.hash: the same digest as a Hash object without making one (every idle poll fingerprints
  // the boundary call it lists again).
  return hash('sha256', text, 'buffer').subarray(0, FINGERPRINT_BYTES).toString('base64url');
}

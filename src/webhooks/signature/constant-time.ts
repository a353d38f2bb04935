/** Comparison of signatures in constant time: the time taken says nothing about how much of a guess matched. */
import { timingSafeEqual } from 'node:crypto';

/**
 * Whether `given` equals `expected`. Lengths are not secret (every signature of a scheme has the same length),
 * so a length mismatch answers at once; equal lengths compare in constant time.
 */
export function sameBytes(expected: Uint8Array, given: Uint8Array): boolean {
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/**
 * How large a stored offset can grow, so that `poll.boundaryCap` is checked at start against what the
 * broker accepts on the offsets topic (its max.message.bytes), instead of a location failing on a busy
 * instant months later with MESSAGE_TOO_LARGE.
 *
 * The boundary holds up to `boundaryCap` uids. The spec does not bound a uid's length, so the check
 * assumes uids of up to ASSUMED_MAX_UID_BYTES bytes (a UUID has 36) and a cursor of up to
 * ASSUMED_MAX_CURSOR_BYTES; the encoding itself is the offset codec's, so a change of format is
 * measured, not guessed.
 */
import type { Admin } from 'kafkajs';
import { FatalError } from '../../errors/index.js';
import { topicMaxMessageBytes } from '../topics/topics.js';
import { encodeOffsetValue, offsetKey } from './offset-codec.js';

export const ASSUMED_MAX_UID_BYTES = 64;
export const ASSUMED_MAX_CURSOR_BYTES = 2_048;
/** Record batch header (61 bytes), record framing and the transaction's control overhead, rounded up. */
const RECORD_OVERHEAD_BYTES = 256;

const TIMESTAMP = '2024-01-01T00:00:00.000000000+00:00';
/** A boundary fingerprint as sync/location/fingerprint.ts writes it: 96 bits, base64url. */
const FINGERPRINT = 'f'.repeat(16);

function encodedBytes(entries: number, connectorName: string): number {
  // Distinct uids: each boundary entry also has its fingerprint, keyed by the uid (traversal.ts).
  const uids = Array.from({ length: entries }, (_, i) => `${i}`.padStart(ASSUMED_MAX_UID_BYTES, 'u'));
  const value = encodeOffsetValue({
    since: TIMESTAMP,
    cursor: 'c'.repeat(ASSUMED_MAX_CURSOR_BYTES),
    watermark: TIMESTAMP,
    boundary: uids,
    boundaryFingerprints: Object.fromEntries(uids.map((uid) => [uid, FINGERPRINT])),
    boundaryOverflow: true,
  });
  const key = offsetKey(connectorName, 'l'.repeat(ASSUMED_MAX_UID_BYTES));
  return Buffer.byteLength(value) + Buffer.byteLength(key) + RECORD_OVERHEAD_BYTES;
}

/** The largest offset record (key, value, framing) a location with a full boundary can write. */
export function worstCaseOffsetRecordBytes(boundaryCap: number, connectorName: string): number {
  if (!Number.isInteger(boundaryCap) || boundaryCap < 1) throw new RangeError('boundaryCap must be >= 1');
  // Linear in the entries: measured on two sizes, so a cap of a million needs no 70 MB string.
  const one = encodedBytes(1, connectorName);
  const perEntry = encodedBytes(2, connectorName) - one;
  return one + (boundaryCap - 1) * perEntry;
}

/** The largest boundaryCap whose worst-case offset record fits in `maxMessageBytes`. */
export function largestBoundaryCapFor(maxMessageBytes: number, connectorName: string): number {
  const one = encodedBytes(1, connectorName);
  const perEntry = encodedBytes(2, connectorName) - one;
  return Math.max(0, Math.floor((maxMessageBytes - one) / perEntry) + 1);
}

/** Kafka's default max.message.bytes (broker message.max.bytes), assumed when the topic does not say. */
export const DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;
/**
 * What an offset record holds besides its boundary, at most: key (connector name and a location uid), the
 * cursor (capped at MAX_CURSOR_LENGTH characters by the call mapper, up to 4 bytes each in UTF-8, plus JSON
 * escapes), since, watermark, the format's keys, and the record framing. Rounded up generously.
 */
const RESERVED_BYTES = 32 * 1024;

/**
 * The bytes the boundary may take in an offset record, so the record fits `maxMessageBytes` whatever the
 * uids' length (LocationSync's boundaryMaxBytes; traversal.ts stops remembering uids past it).
 */
export function boundaryByteBudget(maxMessageBytes: number | undefined): number {
  return Math.max(1024, (maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES) - RESERVED_BYTES);
}

/**
 * Fails with CONFIG_BOUNDARY_CAP_TOO_LARGE (exit 2) when an offset with a full boundary (`poll.boundaryCap`
 * uids) could exceed what the broker accepts on the offsets topic: that location would otherwise fail on
 * every commit once an instant held that many calls. A broker that does not say is not second-guessed.
 * Returns the topic's max.message.bytes, or undefined when it does not say.
 */
export async function verifyOffsetRecordFits(
  admin: Pick<Admin, 'describeConfigs'>,
  settings: { offsetsTopic: string; boundaryCap: number; connectorName: string },
): Promise<number | undefined> {
  const limit = await topicMaxMessageBytes(admin, settings.offsetsTopic);
  if (limit === undefined) return undefined;
  const worst = worstCaseOffsetRecordBytes(settings.boundaryCap, settings.connectorName);
  if (worst <= limit) return limit;
  throw new FatalError(
    'CONFIG_BOUNDARY_CAP_TOO_LARGE',
    `poll.boundaryCap ${settings.boundaryCap} lets an offset record grow to about ${worst} bytes (uids of up to ` +
      `${ASSUMED_MAX_UID_BYTES} bytes), but the offsets topic ${settings.offsetsTopic} accepts at most ${limit} ` +
      `(max.message.bytes): lower poll.boundaryCap to ${largestBoundaryCapFor(limit, settings.connectorName)} or ` +
      `less, or raise max.message.bytes of the topic`,
    { details: { boundaryCap: settings.boundaryCap, worstCaseBytes: worst, maxMessageBytes: limit } },
  );
}

/**
 * The offsets topic's record format, one record per (connector, location), compacted.
 *
 * Key: `<connectorName>/<locationUid>` as UTF-8. The connector name cannot contain `/` (config rule),
 * so the key splits unambiguously at its last `/`; several connectors may share one offsets topic and
 * each reads only its own keys.
 * Value: JSON `{ "version": 2, "since", "cursor", "watermark", "boundary", "boundaryOverflow"?,
 * "boundaryFingerprints"? }` (see LocationOffset). A null value (tombstone) means "no offset": the location
 * starts over, from `sources[].startSince` or the beginning. Readers refuse versions they do not know
 * rather than guess.
 *
 * Both lanes' records may name a signal (`signal`, a string; signal-steps-rule.ts): at the top, the last signal the
 * location carried out; in `history`, the backfill that lane reads for. Readers of the same versions that do not
 * know the field ignore it (the lane is then read as a split's).
 *
 * Versions:
 * - 3 (written while a location is split into lanes, docs/sync.md "Lanes"): version 2's fields are the live
 *   lane; `history`, `{ since, cursor, watermark, boundary, boundaryOverflow?, boundaryFingerprints?, until }`,
 *   is the history lane reading up to `until` (T0). A location that is not split is still written as
 *   version 2, so a release that reads only versions 1 and 2 refuses only the offsets of locations split at
 *   the time (run `offsets reset --history` for them before a downgrade, see docs/runbook.md).
 * - 2 (written when not split): adds `boundaryFingerprints`, `{uid: fingerprint}` for boundary uids (a second change of a
 *   call within one updatedAt value is published, not skipped).
 * - 1 (still read): no fingerprints. Its boundary uids are read without one, which the traversal takes as
 *   "published in an unknown version": each is published once more when next listed, then remembered
 *   with its fingerprint. Doubling at most the boundary once per location after the upgrade is the safe
 *   reading; taking them as matching would silently skip a second change made before the upgrade.
 *   A release that reads only version 1 refuses version 2 records (OFFSET_UNREADABLE): downgrading needs
 *   `offsets reset` (or the upgrade rolled forward again).
 */
import { z } from 'zod';
import { FatalError } from '../../errors/index.js';
import type { LaneOffset, LocationOffset } from '../../sync/model.js';
import { parseInstant } from '../../time/instant.js';

export const OFFSET_FORMAT_VERSION = 2;
/** The version of an offset with a history lane. */
export const LANES_OFFSET_FORMAT_VERSION = 3;
/** Versions this release reads. */
const READABLE_VERSIONS = [1, 2, 3] as const;

export function offsetKey(connectorName: string, locationUid: string): string {
  return `${connectorName}/${locationUid}`;
}

/** Splits an offsets-topic key; undefined for keys not written by this format. */
export function parseOffsetKey(key: string): { connectorName: string; locationUid: string } | undefined {
  const slash = key.lastIndexOf('/');
  if (slash <= 0 || slash === key.length - 1) return undefined;
  return { connectorName: key.slice(0, slash), locationUid: key.slice(slash + 1) };
}

const laneFields = {
  since: z.string().nullable(),
  cursor: z.string().nullable(),
  watermark: z.string().nullable(),
  boundary: z.array(z.string()),
  boundaryOverflow: z.boolean().optional(),
  boundaryFingerprints: z.record(z.string(), z.string()).optional(),
};

const offsetValueSchema = z
  .object({
    version: z.union([
      z.literal(1),
      z.literal(OFFSET_FORMAT_VERSION),
      z.literal(LANES_OFFSET_FORMAT_VERSION),
    ]),
    ...laneFields,
    signal: z.string().optional(),
    history: z
      .object({
        ...laneFields,
        until: z.string().refine((text) => parseInstant(text) !== null, 'not an RFC 3339 date-time'),
        signal: z.string().optional(),
      })
      .loose()
      .optional(),
  })
  .loose()
  .refine((value) => value.version === LANES_OFFSET_FORMAT_VERSION || value.history === undefined, {
    message: 'only format version 3 has a history lane',
    path: ['history'],
  });

/** A lane's fields as stored. */
function encodeLane(lane: LaneOffset): Record<string, unknown> {
  return {
    since: lane.since,
    cursor: lane.cursor,
    watermark: lane.watermark,
    boundary: lane.boundary,
    ...(lane.boundaryOverflow === true ? { boundaryOverflow: true } : {}),
    ...(lane.boundaryFingerprints === undefined || Object.keys(lane.boundaryFingerprints).length === 0
      ? {}
      : { boundaryFingerprints: lane.boundaryFingerprints }),
  };
}

export function encodeOffsetValue(offset: LocationOffset): string {
  const { history } = offset;
  const signal = offset.signal === undefined ? {} : { signal: offset.signal };
  if (history === undefined)
    return JSON.stringify({ version: OFFSET_FORMAT_VERSION, ...encodeLane(offset), ...signal });
  return JSON.stringify({
    version: LANES_OFFSET_FORMAT_VERSION,
    ...encodeLane(offset),
    ...signal,
    history: {
      ...encodeLane(history),
      until: history.until,
      ...(history.signal !== undefined && { signal: history.signal }),
    },
  });
}

/** A lane as read: only fingerprints of boundary uids mean anything; version 1 has none (see the module comment). */
function decodeLane(version: number, stored: z.infer<z.ZodObject<typeof laneFields>>): LaneOffset {
  const { since, cursor, watermark, boundary, boundaryOverflow, boundaryFingerprints } = stored;
  const members = new Set(boundary);
  const fingerprints =
    version === 1 || boundaryFingerprints === undefined
      ? []
      : Object.entries(boundaryFingerprints).filter(([uid]) => members.has(uid));
  return {
    since,
    cursor,
    watermark,
    boundary,
    ...(boundaryOverflow === true ? { boundaryOverflow: true } : {}),
    ...(fingerprints.length === 0 ? {} : { boundaryFingerprints: Object.fromEntries(fingerprints) }),
  };
}

/**
 * Decodes a stored value; null for a tombstone. A value that is not a known version of this format is
 * a FatalError naming the key: the location cannot resume safely, and `offsets reset` is the way out.
 */
export function decodeOffsetValue(key: string, value: Buffer | string | null): LocationOffset | null {
  if (value === null) return null;
  const text = typeof value === 'string' ? value : value.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw corrupt(key, 'it is not JSON', error);
  }
  const result = offsetValueSchema.safeParse(parsed);
  if (!result.success) {
    const version = (parsed as { version?: unknown } | null)?.version;
    const reason =
      typeof version === 'number' && !(READABLE_VERSIONS as readonly number[]).includes(version)
        ? `it has format version ${version}, this connector reads versions ${READABLE_VERSIONS.join(', ')} (was it written by a newer release?)`
        : `it does not match the offset format (${result.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')})`;
    throw corrupt(key, reason);
  }
  const { version, history, signal } = result.data;
  const live = { ...decodeLane(version, result.data), ...(signal !== undefined && { signal }) };
  if (history === undefined) return live;
  const backfill = history.signal === undefined ? {} : { signal: history.signal };
  return { ...live, history: { ...decodeLane(version, history), until: history.until, ...backfill } };
}

function corrupt(key: string, reason: string, cause?: unknown): FatalError {
  return new FatalError(
    'OFFSET_UNREADABLE',
    `the stored offset ${key} cannot be read: ${reason}. Stop the connector and run \`calls-connector offsets reset --location <uid>\` to start that location over.`,
    { cause, details: { key } },
  );
}

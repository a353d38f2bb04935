import { ConfigResourceTypes } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { encodeOffsetValue, offsetKey } from '../../../../src/kafka/offsets/offset-codec.js';
import {
  ASSUMED_MAX_UID_BYTES,
  boundaryByteBudget,
  largestBoundaryCapFor,
  verifyOffsetRecordFits,
  worstCaseOffsetRecordBytes,
} from '../../../../src/kafka/offsets/offset-size.js';
import { MAX_CURSOR_LENGTH, MAX_UID_LENGTH } from '../../../../src/api/call-mapper.js';
import { testFingerprints } from '../../../support/sync/fingerprints.js';
import { EMPTY_OFFSET } from '../../../../src/sync/model.js';
import { applyPage } from '../../../../src/sync/location/traversal.js';
import { rejectionOf } from '../../../support/rejection.js';

/** An admin whose offsets topic reports this max.message.bytes. */
function adminWithLimit(limit: string | undefined) {
  return {
    describeConfigs: async () => ({
      throttleTime: 0,
      resources: [
        {
          errorCode: 0,
          errorMessage: '',
          resourceName: 'offsets',
          resourceType: ConfigResourceTypes.TOPIC,
          configEntries:
            limit === undefined
              ? []
              : [
                  {
                    configName: 'max.message.bytes',
                    configValue: limit,
                    isDefault: true,
                    configSource: 5,
                    isSensitive: false,
                    readOnly: false,
                    configSynonyms: [],
                  },
                ],
        },
      ],
    }),
  };
}

describe('worstCaseOffsetRecordBytes', () => {
  it('is at least the encoded offset with a full boundary of the longest assumed uids', () => {
    const boundary = Array.from({ length: 1_000 }, () => 'u'.repeat(ASSUMED_MAX_UID_BYTES));
    const encoded = encodeOffsetValue({ since: null, cursor: null, watermark: null, boundary });
    const key = offsetKey('conn', 'l'.repeat(36));
    expect(worstCaseOffsetRecordBytes(1_000, 'conn')).toBeGreaterThan(encoded.length + key.length);
  });

  it('sizes each boundary entry with its fingerprint, as the connector writes it', () => {
    // A 64-byte uid takes about 67 bytes in the boundary and about 86 more in boundaryFingerprints.
    const perEntry = worstCaseOffsetRecordBytes(2, 'c') - worstCaseOffsetRecordBytes(1, 'c');
    expect(perEntry).toBeGreaterThanOrEqual(2 * (ASSUMED_MAX_UID_BYTES + 3) + 16);
  });

  it('grows with the cap, and the largest fitting cap is the last one under the limit', () => {
    const cap = largestBoundaryCapFor(1_048_588, 'conn');
    expect(worstCaseOffsetRecordBytes(cap, 'conn')).toBeLessThanOrEqual(1_048_588);
    expect(worstCaseOffsetRecordBytes(cap + 1, 'conn')).toBeGreaterThan(1_048_588);
  });
});

describe('verifyOffsetRecordFits', () => {
  it('accepts the default cap of 5,000 under the broker default of about 1 MiB', async () => {
    await verifyOffsetRecordFits(adminWithLimit('1048588'), {
      offsetsTopic: 'offsets',
      boundaryCap: 5_000,
      connectorName: 'conn',
    });
  });

  it('refuses a cap whose offset could outgrow max.message.bytes, naming a cap that fits', async () => {
    const error = await rejectionOf(
      verifyOffsetRecordFits(adminWithLimit('200000'), {
        offsetsTopic: 'offsets',
        boundaryCap: 5_000,
        connectorName: 'conn',
      }),
    );
    expect(error).toMatchObject({ code: 'CONFIG_BOUNDARY_CAP_TOO_LARGE' });
    const message = (error as Error).message;
    expect(message).toContain('poll.boundaryCap 5000');
    expect(message).toContain(`lower poll.boundaryCap to ${largestBoundaryCapFor(200_000, 'conn')}`);
    expect(message).toContain('offsets topic offsets accepts at most 200000');
  });

  it('does not second-guess a broker that does not report the limit', async () => {
    await verifyOffsetRecordFits(adminWithLimit(undefined), {
      offsetsTopic: 'offsets',
      boundaryCap: 1_000_000,
      connectorName: 'conn',
    });
  });
});

describe('boundaryByteBudget', () => {
  it('keeps the offset record under max.message.bytes however long the uids and the cursor are', () => {
    for (const limit of [200_000, 1_048_588]) {
      // Uids of the longest accepted length, multi-byte characters, all at one instant: more than fit.
      const uid = (i: number) => `${'é'.repeat(MAX_UID_LENGTH - 8)}${String(i).padStart(8, '0')}`;
      const entries = Array.from({ length: 5_000 }, (_, i) => ({
        uid: uid(i),
        updatedAt: '2024-01-01T00:00:00.123456789+00:00',
        fingerprint: testFingerprints.text(String(i)),
      }));
      const outcome = applyPage(
        { ...EMPTY_OFFSET },
        entries,
        '\u00e9'.repeat(MAX_CURSOR_LENGTH),
        1_000_000,
        boundaryByteBudget(limit),
      );
      expect(outcome.offset.boundaryOverflow).toBe(true);
      const record =
        Buffer.byteLength(encodeOffsetValue(outcome.offset)) +
        Buffer.byteLength(offsetKey('conn', uid(0))) +
        256;
      expect(record).toBeLessThanOrEqual(limit);
      expect(outcome.offset.boundary.length).toBeGreaterThan(0);
    }
  });

  it('assumes the broker default when the topic does not say', () => {
    expect(boundaryByteBudget(undefined)).toBe(boundaryByteBudget(1_048_588));
  });
});

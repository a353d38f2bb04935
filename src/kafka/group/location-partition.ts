/**
 * Which partition of the offsets topic a location's offset lives in, and so (in `connector.mode: distributed`)
 * which group member owns the location: the producer's own partitioning of the offset key, kafkajs's
 * DefaultPartitioner (murmur2 of the key bytes modulo the partition count, as the Java client), which the
 * sinks use to write the offset record. Reusing it, not a copy, keeps the two from ever disagreeing.
 *
 * Pure: the partition count is the offsets topic's, which must never change after creation (a key's
 * partition would move, and with it the location's offset history).
 */
import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { offsetKey } from '../offsets/offset-codec.js';

const partitioner = Partitioners.DefaultPartitioner();
const metadataByCount = new Map<number, PartitionMetadata[]>();

function metadataOf(partitionCount: number): PartitionMetadata[] {
  let metadata = metadataByCount.get(partitionCount);
  if (metadata === undefined) {
    // The partitioner uses only the ids (a keyed message goes to murmur2 % count whatever the leaders).
    metadata = Array.from({ length: partitionCount }, (_, partitionId) => ({
      partitionId,
      leader: 0,
      partitionErrorCode: 0,
      replicas: [0],
      isr: [0],
    }));
    metadataByCount.set(partitionCount, metadata);
  }
  return metadata;
}

/** The offsets-topic partition of the key `<connectorName>/<locationUid>` among `partitionCount` partitions. */
export function locationPartition(
  connectorName: string,
  locationUid: string,
  partitionCount: number,
): number {
  return keyPartition(offsetKey(connectorName, locationUid), partitionCount);
}

/** The partition the sinks' producers send a message with this key to, among `partitionCount` partitions. */
export function keyPartition(key: Buffer | string, partitionCount: number): number {
  if (!Number.isInteger(partitionCount) || partitionCount < 1)
    throw new RangeError('partitionCount must be a positive integer');
  return partitioner({
    topic: '',
    partitionMetadata: metadataOf(partitionCount),
    message: { key, value: null },
  });
}

/** Location uids grouped by their partition (only partitions holding a location appear). */
export function locationsByPartition(
  connectorName: string,
  locationUids: readonly string[],
  partitionCount: number,
): Map<number, string[]> {
  const byPartition = new Map<number, string[]>();
  for (const uid of locationUids) {
    const partition = locationPartition(connectorName, uid, partitionCount);
    const list = byPartition.get(partition);
    if (list === undefined) byPartition.set(partition, [uid]);
    else list.push(uid);
  }
  return byPartition;
}

/**
 * The broker's last stable offset (LSO) and high watermark of a topic's partitions, from one ListOffsets
 * request each (v2: isolation level READ_COMMITTED gives the LSO, READ_UNCOMMITTED the high watermark).
 *
 * kafkajs' admin only asks for the high watermark, so the chaos driver speaks this one request itself. An
 * LSO below the high watermark means a transaction is open on that partition: right after a `kill -9` of the
 * connector (nothing else writes), that is the proof that the kill landed inside a transaction.
 * Single-broker stacks only (the chaos stack): every partition's leader is the broker it connects to.
 */
import { connect } from 'node:net';

const LIST_OFFSETS = 2;
const API_VERSION = 2;

export interface PartitionOffsets {
  partition: number;
  lastStable: bigint;
  high: bigint;
}

function int16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
}

function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}

function str(s: string): Buffer {
  const bytes = Buffer.from(s, 'utf8');
  return Buffer.concat([int16(bytes.length), bytes]);
}

function request(correlationId: number, isolation: 0 | 1, topic: string, partitions: number[]): Buffer {
  const latest = Buffer.alloc(8);
  latest.writeBigInt64BE(-1n);
  const body = Buffer.concat([
    int16(LIST_OFFSETS),
    int16(API_VERSION),
    int32(correlationId),
    str('calls-chaos-driver'),
    int32(-1),
    Buffer.from([isolation]),
    int32(1),
    str(topic),
    int32(partitions.length),
    ...partitions.map((p) => Buffer.concat([int32(p), latest])),
  ]);
  return Buffer.concat([int32(body.length), body]);
}

function parse(response: Buffer): Map<number, bigint> {
  let at = 4; // correlation id
  at += 4; // throttle time
  const out = new Map<number, bigint>();
  const topics = response.readInt32BE(at);
  at += 4;
  for (let t = 0; t < topics; t++) {
    at += 2 + response.readInt16BE(at);
    const partitions = response.readInt32BE(at);
    at += 4;
    for (let p = 0; p < partitions; p++) {
      const partition = response.readInt32BE(at);
      const error = response.readInt16BE(at + 4);
      const offset = response.readBigInt64BE(at + 14);
      at += 22;
      if (error !== 0) throw new Error(`ListOffsets: error ${error} on partition ${partition}`);
      out.set(partition, offset);
    }
  }
  return out;
}

/** Both offsets of each partition, over one short-lived connection. */
export async function lastStableOffsets(
  broker: string,
  topic: string,
  partitions: number[],
): Promise<PartitionOffsets[]> {
  const [host, port] = broker.split(':');
  const socket = connect({ host: host ?? '127.0.0.1', port: Number(port) });
  socket.setTimeout(5000);
  try {
    const responses = await new Promise<Buffer[]>((resolve, reject) => {
      const got: Buffer[] = [];
      let buffered = Buffer.alloc(0);
      socket.once('error', reject);
      socket.once('timeout', () => reject(new Error(`ListOffsets: no answer from ${broker}`)));
      socket.on('data', (chunk: Buffer) => {
        buffered = Buffer.concat([buffered, chunk]);
        while (buffered.length >= 4 && buffered.length >= 4 + buffered.readInt32BE(0)) {
          const size = buffered.readInt32BE(0);
          got.push(buffered.subarray(4, 4 + size));
          buffered = buffered.subarray(4 + size);
          if (got.length === 2) resolve(got);
        }
      });
      socket.write(request(1, 1, topic, partitions));
      socket.write(request(2, 0, topic, partitions));
    });
    const byCorrelation = new Map(responses.map((r) => [r.readInt32BE(0), parse(r)] as const));
    const stable = byCorrelation.get(1) ?? new Map<number, bigint>();
    const high = byCorrelation.get(2) ?? new Map<number, bigint>();
    return partitions.map((partition) => ({
      partition,
      lastStable: stable.get(partition) ?? -1n,
      high: high.get(partition) ?? -1n,
    }));
  } finally {
    socket.destroy();
  }
}

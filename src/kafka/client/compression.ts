/**
 * Record batch compression (`kafka.compression`). kafkajs compresses with gzip itself and leaves the other
 * codecs Kafka defines to plug-ins registered in its process-wide `CompressionCodecs` table:
 * - snappy: kafkajs-snappy (the kafkajs authors' codec; pure JavaScript, reads Java's xerial framing too);
 * - lz4: lz4-napi's LZ4 frame format (a maintained native binding shipped as npm binaries; kafkajs-lz4
 *   depends on the unmaintained `lz4` addon, which must be compiled);
 * - zstd: node:zlib's built-in Zstandard (Node >= 22.15), no dependency.
 *
 * Every codec is registered once, before the first client is built, whatever `kafka.compression` says: the
 * consumers (offsets topic, `tail`) then read batches another producer compressed with any codec.
 * The broker decompresses every batch it validates, so a batch it accepted was readable by Kafka's Java codecs.
 */
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import kafkajs, { CompressionTypes } from 'kafkajs';
import SnappyCodec from 'kafkajs-snappy';
import { compressFrame, decompressFrame } from 'lz4-napi';

import type { KafkaConfig } from '../../config/schema.js';

export type Compression = KafkaConfig['compression'];

/** kafkajs' codec shape: compress gets its Encoder (the batch's records in `buffer`). */
export interface KafkajsCodec {
  compress(encoder: { buffer: Buffer }): Promise<Buffer>;
  decompress(buffer: Buffer): Promise<Buffer>;
}

const lz4Codec = (): KafkajsCodec => ({
  compress: (encoder) => compressFrame(encoder.buffer),
  decompress: (buffer) => decompressFrame(buffer),
});

/** Undefined on a Node without Zstandard in node:zlib (before 22.15 / 23.8). */
function zstdCodec(): (() => KafkajsCodec) | undefined {
  if (typeof zlib.zstdCompress !== 'function' || typeof zlib.zstdDecompress !== 'function') return undefined;
  const compress = promisify(zlib.zstdCompress);
  const decompress = promisify(zlib.zstdDecompress);
  return () => ({
    compress: (encoder) => compress(encoder.buffer),
    decompress: (buffer) => decompress(buffer),
  });
}

const zstd = zstdCodec();
// From the default export: Node's ESM loader does not see CompressionCodecs among kafkajs' named exports.
const { CompressionCodecs } = kafkajs;
let registered = false;

/** Registers the snappy, lz4 and zstd codecs with kafkajs (idempotent). */
export function registerCompressionCodecs(): void {
  if (registered) return;
  registered = true;
  CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec;
  CompressionCodecs[CompressionTypes.LZ4] = lz4Codec;
  if (zstd !== undefined) CompressionCodecs[CompressionTypes.ZSTD] = zstd;
}

/** Whether this process can write `compression` (zstd needs Node >= 22.15). */
export function compressionAvailable(compression: Compression): boolean {
  return compression !== 'zstd' || zstd !== undefined;
}

/** The kafkajs value of a `kafka.compression` setting, passed to every sendBatch of records. */
export function compressionType(compression: Compression): CompressionTypes {
  switch (compression) {
    case 'none':
      return CompressionTypes.None;
    case 'gzip':
      return CompressionTypes.GZIP;
    case 'snappy':
      return CompressionTypes.Snappy;
    case 'lz4':
      return CompressionTypes.LZ4;
    case 'zstd':
      return CompressionTypes.ZSTD;
  }
}

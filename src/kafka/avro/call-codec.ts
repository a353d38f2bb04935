/**
 * Encodes a Call as the calls topic's record value (and key): Avro per `schemas/call.avsc`, framed in
 * the Confluent wire format (magic byte 0, 4-byte big-endian schema id, Avro binary).
 *
 * Contract: `CallCodec.create()` is called once at start; it looks the schemas up in the registry (so a
 * registry where only an administrator may register still works when the schema is already there) and
 * registers them under `<topic>-value` (and `<topic>-key` for Avro keys) when missing. What is registered is
 * the schema file as shipped, with its docs, defaults and logical types (consumers' deserializers read
 * `updatedAt` as a timestamp, and the next version may add an optional field under BACKWARD). Afterwards
 * encoding is synchronous and local: the schema id is cached, no registry round trip per record.
 */
import { COMPATIBILITY, SchemaType, type SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import avro, { type Schema } from 'avsc';
import { FatalError, RetriableError, SkippableError } from '../../errors/index.js';
import type { Call } from '../../sync/model.js';
import { CALL_KEY_SCHEMA_FILE, CALL_VALUE_SCHEMA_FILE, loadSchema } from './schema-files.js';
import { epochMicrosToIso, isoToEpochMicros } from './timestamps.js';
import { systemClock, type Clock } from '../../time/clock.js';

/** Reads and writes `timestamp-micros` longs as ISO-8601 strings, so a Call's times go in as they are. */
class IsoTimestampMicros extends avro.types.LogicalType {
  protected override _fromValue(value: number): string {
    return epochMicrosToIso(value);
  }
  protected override _toValue(value: unknown): number | undefined {
    // undefined makes avsc reject the value as invalid for this type.
    return typeof value === 'string' ? isoToEpochMicros(value) : undefined;
  }
  protected override _resolve(type: avro.Type): ((value: number) => number) | undefined {
    if (avro.Type.isType(type, 'long', 'logical:timestamp-micros')) return (value) => value;
    return undefined;
  }
}

export const AVRO_LOGICAL_TYPES = { 'timestamp-micros': IsoTimestampMicros };

export function callValueType(schema: Schema = loadSchema(CALL_VALUE_SCHEMA_FILE)): avro.Type {
  return avro.Type.forSchema(schema, { logicalTypes: AVRO_LOGICAL_TYPES });
}

/** The Avro record for one Call: the Call's fields plus the exact updatedAt text and connector metadata. */
export interface CallRecord extends Call {
  updatedAtIso: string;
  connectorName: string | null;
  /** Epoch milliseconds. */
  ingestedAt: number | null;
}

export function toCallRecord(call: Call, connectorName: string, ingestedAtMs: number): CallRecord {
  return {
    uid: call.uid,
    locationUid: call.locationUid,
    updatedAt: call.updatedAt,
    updatedAtIso: call.updatedAt,
    locationPhoneNumber: call.locationPhoneNumber,
    customerPhoneNumber: call.customerPhoneNumber,
    startedAt: call.startedAt,
    endedAt: call.endedAt,
    isPrivate: call.isPrivate,
    conversationUid: call.conversationUid,
    enriched: call.enriched,
    customerPhoneNumberRedacted: call.customerPhoneNumberRedacted,
    connectorName,
    ingestedAt: ingestedAtMs,
  };
}

const MAGIC_BYTE = 0;

/** Confluent wire format: magic byte 0, schema id as a 4-byte big-endian int, then the Avro body. */
export function frameConfluent(schemaId: number, body: Buffer): Buffer {
  const framed = Buffer.allocUnsafe(5 + body.length);
  framed.writeUInt8(MAGIC_BYTE, 0);
  framed.writeInt32BE(schemaId, 1);
  body.copy(framed, 5);
  return framed;
}

export type KeyFormat = 'string' | 'avro';

/** What the codec needs of the registry client: a seam, so the codec can be built without a registry (tests, benchmarks). */
export type SchemaRegistryClient = Pick<SchemaRegistry, 'getRegistryIdBySchema' | 'register'>;

export interface CallCodecOptions {
  registry: SchemaRegistryClient;
  topic: string;
  keyFormat: KeyFormat;
  connectorName: string;
  /** Compatibility level set on a subject the connector registers first (the registry library checks it). */
  compatibility?: COMPATIBILITY;
  /** Where ingestedAt is read (default: the system clock). */
  clock?: Clock;
  /**
   * Largest encoded value accepted (default 900,000 bytes, under the broker's 1 MiB message.max.bytes):
   * a larger one could never be written and would block its location, so it is rejected as skippable.
   */
  maxValueBytes?: number;
}

export const DEFAULT_MAX_VALUE_BYTES = 900_000;

interface KeyEncoding {
  type: avro.Type;
  schemaId: number;
}

export class CallCodec {
  private constructor(
    private readonly valueType: avro.Type,
    readonly valueSchemaId: number,
    private readonly key: KeyEncoding | undefined,
    private readonly connectorName: string,
    private readonly clock: Clock,
    private readonly maxValueBytes: number,
  ) {}

  static async create(options: CallCodecOptions): Promise<CallCodec> {
    const compatibility = options.compatibility ?? COMPATIBILITY.BACKWARD;
    const valueSchema = loadSchema(CALL_VALUE_SCHEMA_FILE);
    const valueType = callValueType(valueSchema);
    const valueSchemaId = await ensureRegistered(
      options.registry,
      `${options.topic}-value`,
      valueSchema,
      compatibility,
    );
    let key: KeyEncoding | undefined;
    if (options.keyFormat === 'avro') {
      const keySchema = loadSchema(CALL_KEY_SCHEMA_FILE);
      key = {
        type: avro.Type.forSchema(keySchema),
        schemaId: await ensureRegistered(options.registry, `${options.topic}-key`, keySchema, compatibility),
      };
    }
    return new CallCodec(
      valueType,
      valueSchemaId,
      key,
      options.connectorName,
      options.clock ?? systemClock,
      options.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES,
    );
  }

  /** The record key: the uid as UTF-8 (partitioned by murmur2 like the Java client), or Avro `CallKey`. */
  encodeKey(call: Pick<Call, 'uid'>): string | Buffer {
    if (this.key === undefined) return call.uid;
    return frameConfluent(this.key.schemaId, this.key.type.toBuffer({ uid: call.uid }));
  }

  /**
   * The record value. Throws SkippableError ITEM_SCHEMA_REJECTED, naming the offending fields, when the
   * schema rejects the call, or ITEM_TOO_LARGE; the sink then routes it to the dead-letter topic instead.
   */
  encodeValue(call: Call): Buffer {
    const record = toCallRecord(call, this.connectorName, this.clock.now());
    let body: Buffer;
    try {
      body = this.valueType.toBuffer(record);
    } catch (error) {
      const paths: string[] = [];
      this.valueType.isValid(record, { errorHook: (path) => paths.push(path.join('.')) });
      throw new SkippableError(
        'ITEM_SCHEMA_REJECTED',
        `call ${call.uid} does not match the Avro schema${paths.length > 0 ? ` (fields: ${paths.join(', ')})` : ''}`,
        { cause: error, details: { uid: call.uid, fields: paths } },
      );
    }
    const value = frameConfluent(this.valueSchemaId, body);
    if (value.length > this.maxValueBytes) {
      throw new SkippableError(
        'ITEM_TOO_LARGE',
        `call ${call.uid} encodes to ${value.length} bytes, more than the ${this.maxValueBytes} a record may have`,
        { details: { uid: call.uid, bytes: value.length } },
      );
    }
    return value;
  }

  /** Decodes a value this codec wrote (tests, diagnostics); times come back as ISO strings. */
  decodeValue(framed: Buffer): CallRecord {
    if (framed.readUInt8(0) !== MAGIC_BYTE)
      throw new Error('not in the Confluent wire format (magic byte is not 0)');
    return this.valueType.fromBuffer(framed.subarray(5)) as CallRecord;
  }
}

/**
 * Returns the id of `schema` under `subject`, registering it when the registry does not have it. `schema` is
 * the JSON as written (not avsc's `Type.schema()`, which drops docs, defaults and unknown logical types).
 * Registry unreachable or 5xx: RetriableError. Refused (401/403, incompatible schema): FatalError.
 */
export async function ensureRegistered(
  registry: SchemaRegistryClient,
  subject: string,
  written: Schema,
  compatibility: COMPATIBILITY,
): Promise<number> {
  const schema = JSON.stringify(written);
  try {
    return await registry.getRegistryIdBySchema(subject, { type: SchemaType.AVRO, schema });
  } catch (error) {
    // The library turns the registry's 404 (subject or schema not found) into a bare ConfluentSchemaRegistryError.
    const notFound =
      statusOf(error) === 404 || (error instanceof Error && error.name === 'ConfluentSchemaRegistryError');
    if (!notFound) throw registryError(subject, 'look up', error);
  }
  try {
    const { id } = await registry.register({ type: SchemaType.AVRO, schema }, { subject, compatibility });
    return id;
  } catch (error) {
    // Instances starting together (replicas in distributed mode) race to create a new subject: a loser can
    // find the subject created but its compatibility not set yet (Apicurio answers NONE meanwhile) and the
    // library refuses. Whoever won registered this very schema: its id is the answer.
    const registered = await registry
      .getRegistryIdBySchema(subject, { type: SchemaType.AVRO, schema })
      .catch(() => undefined);
    if (registered !== undefined) return registered;
    throw registryError(subject, 'register', error);
  }
}

function statusOf(error: unknown): number | undefined {
  if (error !== null && typeof error === 'object' && 'status' in error && typeof error.status === 'number')
    return error.status;
  return undefined;
}

function registryError(subject: string, action: string, error: unknown): Error {
  const status = statusOf(error);
  const reason = error instanceof Error ? error.message : String(error);
  if (status === undefined && !(error instanceof Error && error.name.startsWith('ConfluentSchemaRegistry'))) {
    return new RetriableError(
      'SCHEMA_REGISTRY_UNAVAILABLE',
      `cannot ${action} the schema of ${subject}: ${reason}`,
      { cause: error },
    );
  }
  if (status !== undefined && (status >= 500 || status === 408 || status === 429)) {
    return new RetriableError(
      'SCHEMA_REGISTRY_UNAVAILABLE',
      `cannot ${action} the schema of ${subject} (HTTP ${status}): ${reason}`,
      {
        cause: error,
      },
    );
  }
  return new FatalError(
    'SCHEMA_REGISTRY_REFUSED',
    `the schema registry refused to ${action} the schema of ${subject}${status === undefined ? '' : ` (HTTP ${status})`}: ${reason}. ` +
      'Check schemaRegistry credentials, the subject compatibility (schemaRegistry.compatibility) and that the change is compatible.',
    { cause: error },
  );
}

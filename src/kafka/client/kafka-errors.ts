/**
 * Reads what a kafkajs failure was about. kafkajs wraps broker error codes in KafkaJSProtocolError
 * (`type`, e.g. INVALID_PRODUCER_EPOCH), and wraps those again after retries (`cause`) or when several
 * requests failed (KafkaJSAggregateError `errors`), so the codes are collected from the whole chain.
 */

/** Broker error types that mean another producer with our transactionalId has a newer epoch. */
const FENCED_TYPES = new Set(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED']);

/** Broker error types no retry or rebuild can fix: a person must change ACLs or configuration. */
const FATAL_TYPES = new Set([
  'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
  'TOPIC_AUTHORIZATION_FAILED',
  'CLUSTER_AUTHORIZATION_FAILED',
  'INVALID_TRANSACTION_TIMEOUT',
  'UNSUPPORTED_VERSION',
  'SASL_AUTHENTICATION_FAILED',
]);

/** Every kafkajs protocol error type found in an error and the errors it wraps. */
export function kafkaErrorTypes(error: unknown): string[] {
  const types: string[] = [];
  const seen = new Set<unknown>();
  const visit = (e: unknown): void => {
    if (e === null || typeof e !== 'object' || seen.has(e)) return;
    seen.add(e);
    if ('type' in e && typeof e.type === 'string') types.push(e.type);
    if ('cause' in e) visit(e.cause);
    if ('originalError' in e) visit(e.originalError);
    if ('errors' in e && Array.isArray(e.errors)) for (const inner of e.errors as unknown[]) visit(inner);
  };
  visit(error);
  return types;
}

export function isFencedError(error: unknown): boolean {
  return kafkaErrorTypes(error).some((type) => FENCED_TYPES.has(type));
}

/** The first type that no retry can fix, if any. */
export function fatalKafkaErrorType(error: unknown): string | undefined {
  return kafkaErrorTypes(error).find((type) => FATAL_TYPES.has(type));
}

export function describeKafkaError(error: unknown): string {
  const types = kafkaErrorTypes(error);
  const message = error instanceof Error ? error.message : String(error);
  return types.length > 0 ? `${message} [${[...new Set(types)].join(', ')}]` : message;
}

/**
 * Whether a failure is a bug rather than Kafka's answer (errors/: the one test for every adapter). kafkajs
 * reports broker and network failures as KafkaJSError subclasses (plain Errors underneath), never as these.
 */
export { isProgrammerError } from '../../errors/index.js';

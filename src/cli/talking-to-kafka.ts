/**
 * For one-shot commands (`offsets`, `tail`): a kafkajs failure becomes a ConnectorError, so `main` reports it
 * as a runtime failure with its code and what to do (exit 1), not as an internal error with a stack trace.
 * ConnectorErrors pass through unchanged.
 */
import { ConnectorError, RetriableError } from '../errors/index.js';
import { describeKafkaError } from '../kafka/client/kafka-errors.js';

export async function talkingToKafka<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw asKafkaFailure(error);
  }
}

export function asKafkaFailure(error: unknown): ConnectorError {
  if (error instanceof ConnectorError) return error;
  return new RetriableError('KAFKA_UNAVAILABLE', `Kafka: ${describeKafkaError(error)}`, { cause: error });
}

/** kafkajs errors as tests meet them: a KafkaJSProtocolError is recognised by its broker error `type`. */

/** An error carrying the broker's error type, as kafkajs throws it (KafkaJSProtocolError). */
export function protocolError(type: string): Error {
  return Object.assign(new Error(`broker said ${type}`), { type });
}

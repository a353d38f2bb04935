/**
 * A topic reader's kafkajs consumer as an attempt of a RestartLoop (time/restart-loop.ts), for the readers that
 * read a whole topic in a group of their own and must keep reading (kafka/nudges/nudge-reader.ts,
 * kafka/signals/signal-reader.ts): it runs once it joined its group (not when `run()` resolved: a consumer let in
 * and thrown out again must not reset the backoff), and a crash kafkajs does not restart from (`restart: false`:
 * a missing Read ACL on the topic or the group, an unsupported protocol) is its failure. A crash kafkajs restarts
 * from by itself is only reported (`restartedCrash`). The reader's `health()` words the loop's failure with
 * `readerHealth`.
 */
import type { Consumer, EachMessageHandler } from 'kafkajs';
import type { RestartEvents, RestartFailure, Restartable } from '../../time/restart-loop.js';

/**
 * A new kafkajs consumer, not connected. It must restart itself after a retriable crash only while `restarts()`
 * says so (kafkajs's `retry.restartOnFailure`): false once its attempt is stopped, as a crash caused by the
 * stop's own disconnect (a fetch's connection closed) would otherwise start it again and outlive the reader.
 */
export type NewConsumer = (restarts: () => boolean) => Consumer;

export interface ConsumerAttemptOptions {
  topic: string;
  fromBeginning: boolean;
  /**
   * Where a partition's reading resumes after each join, sought synchronously with it (before the new
   * generation's first fetch: kafkajs would resume a group that never commits at the end); undefined: no seek.
   */
  resumeAt: (partition: number) => string | undefined;
  eachMessage: EachMessageHandler;
  /** A crash kafkajs restarts from by itself (the reader logs it). */
  restartedCrash?: (error: Error) => void;
}

/** One attempt of the reader's RestartLoop: a consumer made by `newConsumer`, reading `options.topic`. */
export function consumerAttempt(
  newConsumer: NewConsumer,
  events: RestartEvents,
  options: ConsumerAttemptOptions,
): Restartable {
  const { topic } = options;
  let stopped = false;
  const consumer = newConsumer(() => !stopped);
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    if (stopped) return;
    events.running();
    for (const partition of payload.memberAssignment[topic] ?? []) {
      const offset = options.resumeAt(partition);
      if (offset !== undefined) consumer.seek({ topic, partition, offset });
    }
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (stopped) return;
    if (payload.restart) options.restartedCrash?.(payload.error);
    else events.failed(payload.error);
  });
  return {
    start: async () => {
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: options.fromBeginning });
      // Stopped while connecting: the disconnect may have come before the connection.
      if (stopped) return consumer.disconnect();
      await consumer.run({ autoCommit: false, eachMessage: options.eachMessage });
    },
    stop: async () => {
      stopped = true;
      await consumer.disconnect();
    },
  };
}

/** A reader's health from its loop's failure: `<code>: <why>; a new consumer in N s` while not running. */
export function readerHealth(code: string, failure: RestartFailure | null): { ok: boolean; detail?: string } {
  if (failure === null) return { ok: true };
  const retry =
    failure.retryInMs === null
      ? 'starting a new consumer'
      : `a new consumer in ${Math.ceil(failure.retryInMs / 1_000)} s`;
  return { ok: false, detail: `${code}: ${failure.reason}; ${retry}` };
}

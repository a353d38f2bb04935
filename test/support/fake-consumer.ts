/**
 * What the topic readers use of a kafkajs consumer (kafka/topics/restarting-consumer.ts): its group join and
 * crash events are emitted by the test, its messages delivered by the test (one by one, or as a fetched batch
 * with its batch events), its seeks and disconnect recorded.
 */
import { EventEmitter } from 'node:events';
import type { EachMessagePayload } from 'kafkajs';

const EVENTS = {
  GROUP_JOIN: 'consumer.group_join',
  CRASH: 'consumer.crash',
  START_BATCH_PROCESS: 'consumer.start_batch_process',
  END_BATCH_PROCESS: 'consumer.end_batch_process',
};

export class FakeConsumer {
  readonly events = EVENTS;
  readonly seeks: Array<{ partition: number; offset: string }> = [];
  running = false;
  disconnected = false;
  private readonly emitter = new EventEmitter();
  private eachMessage: ((payload: EachMessagePayload) => Promise<void>) | undefined;

  constructor(private readonly topic: string) {}

  on(event: string, listener: (e: { payload: unknown }) => void): () => void {
    this.emitter.on(event, listener);
    return () => this.emitter.off(event, listener);
  }
  connect = (): Promise<void> => Promise.resolve();
  subscribe = (): Promise<void> => Promise.resolve();
  run = (config: { eachMessage: (payload: EachMessagePayload) => Promise<void> }): Promise<void> => {
    this.eachMessage = config.eachMessage;
    this.running = true;
    return Promise.resolve();
  };
  seek = (seek: { topic: string; partition: number; offset: string }): void => {
    this.seeks.push({ partition: seek.partition, offset: seek.offset });
  };
  disconnect = (): Promise<void> => {
    this.disconnected = true;
    return Promise.resolve();
  };

  joined(partitions: number[]): void {
    this.emitter.emit(EVENTS.GROUP_JOIN, { payload: { memberAssignment: { [this.topic]: partitions } } });
  }
  crashed(error: Error, restart: boolean): void {
    this.emitter.emit(EVENTS.CRASH, { payload: { error, restart, groupId: 'g' } });
  }
  async deliver(partition: number, offset: string, value: Buffer, key: Buffer | null = null): Promise<void> {
    await this.eachMessage?.({
      topic: this.topic,
      partition,
      message: { offset, key, value },
    } as unknown as EachMessagePayload);
  }

  /**
   * A fetched batch of `partition`, as kafkajs runs it: its start event, `records` to eachMessage (the data
   * records; transaction markers and aborted records are not handed on), its end event naming `lastOffset`, the
   * batch's last offset, a marker's included. `cutAfter`: only that many records are handed on (a seek or a stop
   * cut the batch short); the end event is emitted all the same, as kafkajs does.
   */
  async batch(
    partition: number,
    records: Array<{ offset: string; value: Buffer; key: Buffer | null }>,
    lastOffset: string,
    cutAfter = records.length,
  ): Promise<void> {
    const payload = { topic: this.topic, partition, batchSize: records.length, lastOffset };
    this.emitter.emit(EVENTS.START_BATCH_PROCESS, { payload });
    for (const record of records.slice(0, cutAfter))
      await this.deliver(partition, record.offset, record.value, record.key);
    this.emitter.emit(EVENTS.END_BATCH_PROCESS, { payload });
  }
}

/**
 * The token store's backend for several instances: a compacted Kafka topic of opaque entries, with the shape of
 * the token store's port (auth/store/token-store.ts `EntryBackend`, which the store owns). This module does not
 * import that port (kafka/ and auth/ import nothing of each other): the wiring (runtime/token-store-backend.ts)
 * chooses it when `oauth.store.type: kafka` and hands it to the store as an EntryBackend, where the compiler
 * checks that the shapes match. A compacted Kafka topic, one record per entry, keyed by the
 * entry name (`grant:<name>`, `state:<hash>`); the value is the sealed entry, null deletes it (tombstone).
 * Compaction keeps the last value per key, so the topic stays as small as the store.
 *
 * Reads go to the end of the topic (read_committed end, via readTopicToEnd) every time, so an instance sees
 * a refresh token another instance rotated. Writes are acknowledged by all in-sync replicas (acks=-1,
 * idempotent producer) before `update` resolves: that is the "durable" the token manager relies on.
 *
 * `update` is not atomic across instances (Kafka has no compare-and-set): two instances redeeming the same
 * state at the same moment could both see it unused. The authorization code is single-use at the service, so
 * at most one redemption succeeds; rotated refresh tokens are reconciled by the token manager.
 */
import { RetriableError } from '../../errors/index.js';
import { connectDurableProducer, type DurableProducer, type KafkaClient } from '../client/port.js';
import { readTopicToEnd } from '../topics/topic-reader.js';
import { ensureCompactedTopic } from '../topics/topics.js';

export interface TokenTopicBackendOptions {
  kafka: KafkaClient;
  topic: string;
  /** Prefix of the throw-away consumer groups used to read the topic. */
  groupIdPrefix: string;
  replicationFactor: number;
  /** Create the topic (compacted, one partition) when it is missing. */
  createTopic: boolean;
  readTimeoutMs?: number;
}

export class TokenTopicBackend {
  readonly description: string;
  private producer: DurableProducer | undefined;
  private starting: Promise<DurableProducer> | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: TokenTopicBackendOptions) {
    if (options.topic.length === 0) throw new TypeError('TokenTopicBackend needs a topic');
    this.description = `Kafka topic ${options.topic}`;
  }

  async readAll(): Promise<ReadonlyMap<string, Buffer>> {
    await this.start();
    const entries = new Map<string, Buffer>();
    await readTopicToEnd(
      this.options.kafka,
      {
        topic: this.options.topic,
        groupIdPrefix: this.options.groupIdPrefix,
        timeoutMs: this.options.readTimeoutMs ?? 30_000,
      },
      (record) => {
        if (record.key === null) return;
        const name = record.key.toString('utf8');
        if (record.value === null) entries.delete(name);
        else entries.set(name, record.value);
      },
    );
    return entries;
  }

  update<T>(
    mutate: (current: ReadonlyMap<string, Buffer>) => { changes: Map<string, Buffer | null>; result: T },
  ): Promise<T> {
    const run = this.queue.then(async () => {
      const current = await this.readAll();
      const { changes, result } = mutate(current);
      if (changes.size === 0) return result;
      const producer = await this.start();
      try {
        await producer.send(
          this.options.topic,
          [...changes].map(([name, value]) => ({ key: name, value })),
        );
      } catch (error) {
        throw new RetriableError(
          'AUTH_STORE_WRITE_FAILED',
          `writing to the token topic ${this.options.topic} failed`,
          { cause: error },
        );
      }
      return result;
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    await this.queue;
    const producer = this.producer ?? (await this.starting?.catch(() => undefined));
    this.producer = undefined;
    this.starting = undefined;
    await producer?.disconnect();
  }

  /** Ensures the topic exists and is compacted, and connects the producer (once). */
  private start(): Promise<DurableProducer> {
    if (this.producer !== undefined) return Promise.resolve(this.producer);
    this.starting ??= (async () => {
      await ensureCompactedTopic(this.options.kafka, this.options.topic, {
        replicationFactor: this.options.replicationFactor,
        create: this.options.createTopic,
        configKey: 'oauth.store.topic',
      });
      const producer = await connectDurableProducer(this.options.kafka);
      this.producer = producer;
      return producer;
    })().catch((error: unknown) => {
      this.starting = undefined;
      throw error;
    });
    return this.starting;
  }
}

/**
 * The one lifecycle of a sink's kafkajs producer, shared by both RecordSinks: the only place that
 * builds, connects, discards and disconnects it. The sinks differ only in how a page is written
 * (transactional-sink.ts: group commits in one transaction; at-least-once-sink.ts: records, then the
 * offset); each asks this for a producer, reports one that failed, and closes through it.
 *
 * States (`ProducerState`), every transition checked against `TRANSITIONS`:
 *
 *   idle ──acquire──► starting ──built──► ready ──discard──► broken ──acquire──► rebuilding ──built──► ready
 *                        └──build failed──► broken ◄──build failed── rebuilding
 *   any but closed ──fail──► failed   (stood down for good: fenced by a newer instance, not permitted;
 *                                      after closed, fail() only records the error)
 *   any but failed, closed ──beginClose──► closing ──close──► closed ◄──close── failed
 *
 * While `closing` the sink finishes what it holds: a producer is still handed out, and built on demand
 * when there is none (the state stays `closing`). Once `closed` none is built: a build still under way
 * is disconnected when it ends, so no producer outlives the sink.
 *
 * A transition the table does not allow is a bug in the sink, not Kafka's answer: it throws
 * IllegalProducerTransition (a RangeError, so isProgrammerError holds and it is never retried).
 */
import { FatalError, RetriableError } from '../../errors/index.js';
import type { Logger } from '../../logging/logger.js';
import type { ConnectorMetrics } from '../../metrics/metrics.js';
import { TIMED_OUT, withTimeout, type Clock } from '../../time/clock.js';
import { describeKafkaError } from '../kafka-errors.js';

export type ProducerState =
  'idle' | 'starting' | 'ready' | 'broken' | 'rebuilding' | 'failed' | 'closing' | 'closed';

/** The transitions each state allows (a state not listed as its own target changes on every event). */
export const TRANSITIONS: Readonly<Record<ProducerState, readonly ProducerState[]>> = {
  idle: ['starting', 'failed', 'closing'],
  starting: ['ready', 'broken', 'failed', 'closing'],
  ready: ['broken', 'failed', 'closing'],
  broken: ['rebuilding', 'failed', 'closing'],
  rebuilding: ['ready', 'broken', 'failed', 'closing'],
  failed: ['closed'],
  closing: ['failed', 'closed'],
  closed: [],
};

/** A transition the lifecycle does not allow: a programmer error in the sink. */
export class IllegalProducerTransition extends RangeError {
  constructor(
    readonly from: ProducerState,
    readonly to: ProducerState,
  ) {
    super(`illegal producer transition ${from} → ${to}`);
    this.name = 'IllegalProducerTransition';
  }
}

/** The part of a kafkajs producer the lifecycle uses. */
export interface LifecycleProducer {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
}

export interface ProducerLifecycleOptions<P extends LifecycleProducer> {
  /** Builds a new, unconnected producer (the sink's kafkajs ProducerConfig lives there). */
  build: () => P;
  /**
   * Makes a built producer ready (default: connect). The transactional sink also initialises its
   * transactions here. On failure the producer is disconnected and the error passed on as it is.
   */
  prepare?: (producer: P) => Promise<void>;
  metrics: Pick<ConnectorMetrics, 'producerRecreated'>;
  logger: Logger;
  clock: Clock;
}

export class ProducerLifecycle<P extends LifecycleProducer> {
  private current: ProducerState = 'idle';
  /** The ready producer; undefined unless ready (or closing with one). */
  private producer: P | undefined;
  /** The build under way, shared by concurrent acquire() calls. */
  private building: Promise<P> | undefined;
  private failure: FatalError | undefined;
  private generations = 0;
  /** beginClose() or close() was called (the state may since have become failed). */
  private closeBegun = false;
  /** Aborted when the lifecycle closes: waits that would outlive the sink end with it. */
  private readonly closedController = new AbortController();

  constructor(private readonly options: ProducerLifecycleOptions<P>) {}

  get state(): ProducerState {
    return this.current;
  }

  /** Producers made ready so far: see RecordSink.generation. */
  get generation(): number {
    return this.generations;
  }

  /** The error the lifecycle stood down with, if it did. */
  get fatal(): FatalError | undefined {
    return this.failure;
  }

  /** beginClose() has been called: the sink takes no more pages. */
  get isClosing(): boolean {
    return this.closeBegun;
  }

  /** Aborts when close() is called, for waits (retry sleeps) that must not keep a closed sink alive. */
  get closedSignal(): AbortSignal {
    return this.closedController.signal;
  }

  /**
   * The producer to write with: the ready one, or a new one when there is none (concurrent callers
   * share one build). Rejects with the fatal error once failed, with KAFKA_SINK_CLOSED once closed,
   * and with the build's own error (the state is then broken; the next call builds again).
   */
  acquire(): Promise<P> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.current === 'closed') {
      return Promise.reject(
        new RetriableError('KAFKA_SINK_CLOSED', 'the Kafka sink is closed; no producer is built'),
      );
    }
    if (this.producer !== undefined) return Promise.resolve(this.producer);
    if (this.building === undefined) {
      if (this.current === 'idle') this.transition('starting');
      else if (this.current === 'broken') this.transition('rebuilding');
      // closing: built on demand for what the sink still holds, the state stays closing.
      const building = this.buildProducer();
      this.building = building;
      const settled = (): void => {
        if (this.building === building) this.building = undefined;
      };
      building.then(settled, settled);
    }
    return this.building;
  }

  private async buildProducer(): Promise<P> {
    const producer = this.options.build();
    try {
      await (this.options.prepare ?? ((p: P) => p.connect()))(producer);
    } catch (error) {
      await this.disconnect(producer);
      if (this.current === 'starting' || this.current === 'rebuilding') this.transition('broken');
      throw error;
    }
    if (this.current === 'closed' || this.failure !== undefined) {
      // close() or fail() came while this one was connecting: it must not outlive the sink.
      await this.disconnect(producer);
      if (this.failure !== undefined) throw this.failure;
      throw new RetriableError('KAFKA_SINK_CLOSED', 'the Kafka sink closed while a producer was being built');
    }
    if (this.current !== 'closing') this.transition('ready');
    this.producer = producer;
    this.generations += 1;
    return producer;
  }

  /**
   * The producer failed (a send, a transaction): drops it, so the next acquire() builds a new one,
   * counts producerRecreated{code} and disconnects it. With `failed`, does nothing when that producer
   * was already replaced (a concurrent page reported it first). Without, drops whatever is current.
   */
  async discard(code: string, failed?: P): Promise<void> {
    if (failed !== undefined && failed !== this.producer) return;
    if (this.building !== undefined && failed === undefined) {
      // The caller never got the producer under way: a bug in the sink.
      throw new IllegalProducerTransition(this.current, 'broken');
    }
    this.options.metrics.producerRecreated.inc({ code });
    const producer = this.producer;
    this.producer = undefined;
    if (this.current === 'ready') this.transition('broken');
    if (producer === undefined) return;
    this.options.logger.warn({ code }, 'discarding the producer; the next write builds a new one');
    await this.disconnect(producer);
  }

  /**
   * Stands down for good: no producer is built any more and the current one is disconnected. Returns
   * the first fatal error (the sink reports that one once).
   */
  fail(error: FatalError): FatalError {
    if (this.failure !== undefined) return this.failure;
    // Once closed the state stays closed (a write abandoned by a timed-out close can still end fatally).
    if (this.current !== 'closed') this.transition('failed');
    this.failure = error;
    const producer = this.producer;
    this.producer = undefined;
    if (producer !== undefined) void this.disconnect(producer);
    return error;
  }

  /**
   * Enters closing (the sink takes no more pages) and waits for `pending` (what the sink still holds)
   * at most `timeoutMs` on the clock. Returns false when the time ran out first. Call close() next.
   */
  async beginClose(pending: Promise<void>, timeoutMs?: number): Promise<boolean> {
    this.closeBegun = true;
    if (this.current !== 'closing' && this.current !== 'closed' && this.current !== 'failed') {
      this.transition('closing');
    }
    if (timeoutMs === undefined) {
      await pending;
      return true;
    }
    return (await withTimeout(this.options.clock, pending, timeoutMs)) !== TIMED_OUT;
  }

  /** Closed: disconnects the producer; none is built any more. Safe to call again. */
  async close(): Promise<void> {
    if (this.current === 'closed') return;
    this.closeBegun = true;
    if (this.current !== 'closing' && this.current !== 'failed') this.transition('closing');
    this.transition('closed');
    this.closedController.abort();
    const producer = this.producer;
    this.producer = undefined;
    if (producer !== undefined) await this.disconnect(producer);
  }

  private transition(to: ProducerState): void {
    if (!TRANSITIONS[this.current].includes(to)) throw new IllegalProducerTransition(this.current, to);
    this.options.logger.debug({ from: this.current, to }, 'producer state');
    this.current = to;
  }

  private async disconnect(producer: P): Promise<void> {
    try {
      await producer.disconnect();
    } catch (error) {
      this.options.logger.debug({ err: describeKafkaError(error) }, 'disconnecting a producer failed');
    }
  }
}

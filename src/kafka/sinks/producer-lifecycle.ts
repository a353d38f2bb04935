/**
 * The one lifecycle of a sink's kafkajs producer, shared by both RecordSinks: the only place that
 * builds, connects, discards and disconnects it. The sinks differ only in how a page is written
 * (transactional-sink.ts: group commits in one transaction; at-least-once-sink.ts: records, then the
 * offset); each asks this for a producer, reports one that failed, and closes through it.
 *
 * States (`ProducerState`) change only by an event looked up in `TRANSITIONS`:
 *
 *   idle ─build─► starting ─built─► ready ─discard─► broken ─build─► rebuilding ─built─► ready
 *                    └─buildFailed─► broken ◄─buildFailed─ rebuilding
 *   any but closed ─fail─► failed   (for good: fenced by a newer instance, not permitted)
 *   idle, starting, ready, broken, rebuilding ─beginClose─► closing ─close─► closed ◄─close─ any
 *
 * While `closing` the sink finishes what it holds: a producer is still handed out, and built on demand
 * when there is none (the state stays `closing`). Every build, in any state, first passes `beforeBuild`
 * (the transactional sink's rule: never initialise an id that may have been lost to a newer writer). Once `closed` none is built: a build still under way
 * is disconnected when it ends, so no producer outlives the sink.
 *
 * An event the table does not list for the current state (say, discarding a producer while it is still
 * being built) is a bug in the sink, not Kafka's answer: it throws IllegalProducerTransition, a
 * RangeError, so isProgrammerError holds and it is never retried.
 */
import { FatalError, RetriableError } from '../../errors/index.js';
import type { Logger } from '../../logging/logger.js';
import type { ConnectorMetrics } from '../../metrics/metrics.js';
import { TIMED_OUT, withTimeout, type Clock } from '../../time/clock.js';
import { describeKafkaError } from '../client/kafka-errors.js';

export type ProducerState =
  'idle' | 'starting' | 'ready' | 'broken' | 'rebuilding' | 'failed' | 'closing' | 'closed';

export type ProducerEvent = 'build' | 'built' | 'buildFailed' | 'discard' | 'fail' | 'beginClose' | 'close';

/** For each state, the events it allows and the state each leads to; an event not listed is illegal. */
export const TRANSITIONS: Readonly<
  Record<ProducerState, Readonly<Partial<Record<ProducerEvent, ProducerState>>>>
> = {
  idle: { build: 'starting', fail: 'failed', beginClose: 'closing', close: 'closed' },
  starting: { built: 'ready', buildFailed: 'broken', fail: 'failed', beginClose: 'closing', close: 'closed' },
  ready: { discard: 'broken', fail: 'failed', beginClose: 'closing', close: 'closed' },
  broken: { build: 'rebuilding', discard: 'broken', fail: 'failed', beginClose: 'closing', close: 'closed' },
  rebuilding: {
    built: 'ready',
    buildFailed: 'broken',
    fail: 'failed',
    beginClose: 'closing',
    close: 'closed',
  },
  // Stood down: nothing is built; a close still has to disconnect.
  failed: { discard: 'failed', beginClose: 'failed', close: 'closed' },
  closing: {
    build: 'closing',
    built: 'closing',
    buildFailed: 'closing',
    discard: 'closing',
    fail: 'failed',
    beginClose: 'closing',
    close: 'closed',
  },
  // A write abandoned by a timed-out close may still end (and fail) afterwards.
  closed: { buildFailed: 'closed', discard: 'closed', fail: 'closed', beginClose: 'closed', close: 'closed' },
};

/** An event the lifecycle does not allow in its state: a programmer error in the sink. */
export class IllegalProducerTransition extends RangeError {
  constructor(
    readonly state: ProducerState,
    readonly event: ProducerEvent,
  ) {
    super(`the producer lifecycle does not allow ${event} when ${state}`);
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
  /**
   * Awaited before every build; `rebuild` says a producer was made ready before (a re-initialisation). It throws
   * to refuse: the build fails with that error and builds nothing. The transactional sink decides here whether
   * it may initialise its transactional id (a newer writer may hold it: doing so would fence that writer back).
   * Unset: every build is allowed (the at-least-once sink's idempotent producer fences no one).
   */
  beforeBuild?: (rebuild: boolean) => Promise<void>;
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
  /** Aborted by close(): waits that would outlive the sink end with it. */
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

  /** beginClose() or close() has been called: the sink takes no more pages. */
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
      this.apply('build');
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
    if (this.options.beforeBuild !== undefined) {
      try {
        await this.options.beforeBuild(this.generations > 0);
      } catch (error) {
        if (this.current !== 'failed') this.apply('buildFailed');
        throw error;
      }
    }
    const producer = this.options.build();
    try {
      await (this.options.prepare ?? ((p: P) => p.connect()))(producer);
    } catch (error) {
      await this.disconnect(producer);
      if (this.current !== 'failed') this.apply('buildFailed');
      throw error;
    }
    if (this.current === 'closed' || this.failure !== undefined) {
      // close() or fail() came while this one was connecting: it must not outlive the sink.
      await this.disconnect(producer);
      if (this.failure !== undefined) throw this.failure;
      throw new RetriableError('KAFKA_SINK_CLOSED', 'the Kafka sink closed while a producer was being built');
    }
    this.apply('built');
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
    this.apply('discard');
    this.options.metrics.producerRecreated.inc({ code });
    const producer = this.producer;
    this.producer = undefined;
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
    this.apply('fail');
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
    this.apply('beginClose');
    if (timeoutMs === undefined) {
      await pending;
      return true;
    }
    return (await withTimeout(this.options.clock, pending, timeoutMs)) !== TIMED_OUT;
  }

  /** Closed: disconnects the producer; none is built any more. Safe to call again. */
  async close(): Promise<void> {
    this.closeBegun = true;
    this.apply('close');
    this.closedController.abort();
    const producer = this.producer;
    this.producer = undefined;
    if (producer !== undefined) await this.disconnect(producer);
  }

  private apply(event: ProducerEvent): void {
    const next = TRANSITIONS[this.current][event];
    if (next === undefined) throw new IllegalProducerTransition(this.current, event);
    if (next !== this.current)
      this.options.logger.debug({ from: this.current, to: next, event }, 'producer state');
    this.current = next;
  }

  private async disconnect(producer: P): Promise<void> {
    try {
      await producer.disconnect();
    } catch (error) {
      this.options.logger.debug({ err: describeKafkaError(error) }, 'disconnecting a producer failed');
    }
  }
}

/**
 * The producer lifecycle both sinks share: its states and checked transitions, builds shared by
 * concurrent callers, discards, standing down, and a bounded close on an injected clock.
 */
import { describe, expect, it } from 'vitest';
import { ConnectorError, FatalError } from '../../../../src/errors/index.js';
import { isProgrammerError } from '../../../../src/kafka/client/kafka-errors.js';
import {
  IllegalProducerTransition,
  ProducerLifecycle,
  TRANSITIONS,
  type LifecycleProducer,
} from '../../../../src/kafka/sinks/producer-lifecycle.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { testMetrics } from '../../../support/metrics.js';
import { counterValue } from '../../../support/counters.js';
import { ManualClock } from '../../../support/clock.js';
import { rejectionOf } from '../../../support/rejection.js';

interface FakeProducer extends LifecycleProducer {
  readonly id: number;
  disconnected: boolean;
}

function gate(): { promise: Promise<void>; open: () => void; fail: (error: Error) => void } {
  let open = (): void => undefined;
  let fail: (error: Error) => void = () => undefined;
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

/** Producers whose connect waits for `connect()` of the test (immediate unless replaced). */
class Producers {
  readonly built: FakeProducer[] = [];
  connect: () => Promise<void> = async () => undefined;

  build = (): FakeProducer => {
    const producer: FakeProducer = {
      id: this.built.length + 1,
      disconnected: false,
      connect: () => this.connect(),
      disconnect: async () => {
        producer.disconnected = true;
      },
    };
    this.built.push(producer);
    return producer;
  };
}

function lifecycle(producers = new Producers(), clock = new ManualClock()) {
  const metrics = testMetrics();
  const subject = new ProducerLifecycle<FakeProducer>({
    build: producers.build,
    metrics,
    logger: silentLogger(),
    clock,
  });
  return { subject, producers, metrics, clock };
}

const fenced = new FatalError('KAFKA_FENCED_BY_ANOTHER_INSTANCE', 'a newer instance took over');

describe('ProducerLifecycle', () => {
  it('builds one producer for concurrent callers, going from idle through starting to ready', async () => {
    const { subject, producers } = lifecycle();
    const connecting = gate();
    producers.connect = () => connecting.promise;
    expect(subject.state).toBe('idle');

    const first = subject.acquire();
    const second = subject.acquire();
    expect(subject.state).toBe('starting');
    connecting.open();

    expect(await first).toBe(await second);
    expect(subject.state).toBe('ready');
    expect(producers.built).toHaveLength(1);
    expect(subject.generation).toBe(1);
  });

  it('disconnects a producer whose connect failed, becomes broken, and builds a new one on the next call', async () => {
    const { subject, producers } = lifecycle();
    const refused = new Error('Connection error: ECONNREFUSED');
    producers.connect = async () => {
      throw refused;
    };
    expect(await rejectionOf(subject.acquire())).toBe(refused);
    expect(subject.state).toBe('broken');
    expect(producers.built[0]?.disconnected).toBe(true);

    producers.connect = async () => undefined;
    const building = subject.acquire();
    expect(subject.state).toBe('rebuilding');
    expect((await building).id).toBe(2);
    expect(subject.state).toBe('ready');
    expect(subject.generation).toBe(1);
  });

  it('discards a failed producer: broken, counted with its code, disconnected, and a new generation next time', async () => {
    const { subject, producers, metrics } = lifecycle();
    const first = await subject.acquire();

    await subject.discard('OUT_OF_ORDER_SEQUENCE_NUMBER', first);
    expect(subject.state).toBe('broken');
    expect(first.disconnected).toBe(true);
    expect(await counterValue(metrics.producerRecreated, { code: 'OUT_OF_ORDER_SEQUENCE_NUMBER' })).toBe(1);

    expect((await subject.acquire()).id).toBe(2);
    expect(subject.generation).toBe(2);
    expect(producers.built).toHaveLength(2);
  });

  it('ignores a discard of a producer that a concurrent failure already replaced', async () => {
    const { subject, metrics } = lifecycle();
    const first = await subject.acquire();
    await subject.discard('REQUEST_TIMED_OUT', first);
    const second = await subject.acquire();

    await subject.discard('REQUEST_TIMED_OUT', first);
    expect(subject.state).toBe('ready');
    expect(second.disconnected).toBe(false);
    expect(await counterValue(metrics.producerRecreated)).toBe(1);
  });

  it('throws a programmer error for an event its state does not allow, and stays in that state', async () => {
    const { subject, producers } = lifecycle();
    const idle = await rejectionOf(subject.discard('SEND_FAILED'));
    expect(idle).toBeInstanceOf(IllegalProducerTransition);
    expect(subject.state).toBe('idle');

    const connecting = gate();
    producers.connect = () => connecting.promise;
    const building = subject.acquire();
    // Discarding "the current producer" while it is still being built: the caller never had it.
    const error = await rejectionOf(subject.discard('SEND_FAILED'));
    expect(error).toBeInstanceOf(IllegalProducerTransition);
    expect(isProgrammerError(error)).toBe(true);
    expect(error).toMatchObject({ state: 'starting', event: 'discard' });

    connecting.open();
    await building;
    expect(subject.state).toBe('ready');
  });

  it('builds nothing once failed or closed: neither state allows a build', () => {
    expect(TRANSITIONS.failed.build).toBeUndefined();
    expect(TRANSITIONS.closed.build).toBeUndefined();
    expect(TRANSITIONS.closed.built).toBeUndefined();
    expect(Object.values(TRANSITIONS.closed)).toEqual(Object.values(TRANSITIONS.closed).map(() => 'closed'));
  });

  it('disconnects a producer that finishes connecting after close, and builds none afterwards', async () => {
    const { subject, producers } = lifecycle();
    const connecting = gate();
    producers.connect = () => connecting.promise;
    const starting = subject.acquire();

    await subject.close();
    expect(subject.state).toBe('closed');
    connecting.open();

    expect(((await rejectionOf(starting)) as ConnectorError).code).toBe('KAFKA_SINK_CLOSED');
    expect(producers.built[0]?.disconnected).toBe(true);
    expect(((await rejectionOf(subject.acquire())) as ConnectorError).code).toBe('KAFKA_SINK_CLOSED');
    expect(producers.built).toHaveLength(1);
  });

  it('stands down for good when fenced while writing: the producer is disconnected and every later call gets the first fatal error', async () => {
    const { subject, producers } = lifecycle();
    const writing = await subject.acquire();

    expect(subject.fail(fenced)).toBe(fenced);
    const later = new FatalError('KAFKA_NOT_PERMITTED', 'refused');
    expect(subject.fail(later)).toBe(fenced);
    expect(subject.state).toBe('failed');
    expect(subject.fatal).toBe(fenced);
    await Promise.resolve();
    expect(writing.disconnected).toBe(true);

    expect(await rejectionOf(subject.acquire())).toBe(fenced);
    expect(producers.built).toHaveLength(1);
    await subject.close();
    expect(subject.state).toBe('closed');
  });

  it('still hands out and builds a producer while closing, so a graceful close finishes what the sink holds', async () => {
    const { subject } = lifecycle();
    const first = await subject.acquire();
    const finished = gate();
    const closing = subject.beginClose(finished.promise);
    expect(subject.state).toBe('closing');
    expect(subject.isClosing).toBe(true);

    await subject.discard('SEND_FAILED', first);
    expect(subject.state).toBe('closing');
    const second = await subject.acquire();
    expect(second.id).toBe(2);
    expect(subject.generation).toBe(2);

    finished.open();
    expect(await closing).toBe(true);
    await subject.close();
    expect(second.disconnected).toBe(true);
  });

  it('gives up waiting for the pages after the timeout on its clock, and close then disconnects the producer', async () => {
    const { subject, clock } = lifecycle();
    const producer = await subject.acquire();
    const closing = subject.beginClose(new Promise<void>(() => undefined), 5_000); // never settles

    await clock.sleeping();
    clock.advance(4_999);
    clock.advance(1);
    expect(await closing).toBe(false);
    await subject.close();
    expect(subject.state).toBe('closed');
    expect(producer.disconnected).toBe(true);
    expect(subject.closedSignal.aborted).toBe(true);
    expect(clock.pending).toBe(0);
  });

  it('records a fatal error that comes after close without leaving closed', async () => {
    const { subject } = lifecycle();
    await subject.acquire();
    await subject.close();
    expect(subject.fail(fenced)).toBe(fenced);
    expect(subject.state).toBe('closed');
  });
});

/**
 * Who may initialise the transactional id: the first-build rule, the instances group's answer, the fencing budget
 * (pure), and the rule as the sink applies it with scripted producers (issue 20: a newer instance is never fenced
 * back).
 */
import { describe, expect, it } from 'vitest';
import { ConnectorError, FatalError, RetriableError } from '../../../../src/errors/index.js';
import {
  FencingBudget,
  InitRule,
  initialisationAfterAsking,
  initialisationWithoutAsking,
} from '../../../../src/kafka/sinks/init-rule.js';
import { rejectionOf } from '../../../support/rejection.js';
import { protocolError } from '../../../support/kafka-errors.js';
import { clockReading } from '../../../support/clock.js';
import {
  ScriptedKafka,
  sinkWith,
  page,
  outcome,
  newerInstanceAfterStart,
} from '../../../support/scripted-kafka.js';

describe('the first-build rule', () => {
  it('lets the first initialisation go ahead without asking, in distributed mode and without an instances group', () => {
    expect(initialisationWithoutAsking('distributed', false)).toEqual({ kind: 'initialise' });
    expect(initialisationWithoutAsking('single-without-instances', false)).toEqual({ kind: 'initialise' });
  });

  it('hands the partition back on any later initialisation in distributed mode', () => {
    expect(initialisationWithoutAsking('distributed', true)).toEqual({ kind: 'taken-over' });
  });

  it('stands down on any later initialisation when there is no instances group to ask', () => {
    expect(initialisationWithoutAsking('single-without-instances', true)).toEqual({
      kind: 'stand-down',
      why: 'no instances group to ask',
    });
  });

  it('initialises when the instances group shows no newer instance, and stands down when it shows one', () => {
    expect(initialisationAfterAsking(true)).toEqual({ kind: 'initialise' });
    expect(initialisationAfterAsking(false)).toMatchObject({ kind: 'stand-down' });
  });
});

describe('InitRule', () => {
  const fencing = { limit: 1, windowMs: 60_000 };

  it('asks the instances group before every initialisation in single mode, saying which', async () => {
    const asked: string[] = [];
    const rule = new InitRule({
      connectorName: 'conn',
      distributed: false,
      instances: { newest: async (initialisation) => (asked.push(initialisation), true) },
      fencing,
    });
    expect(await rule.beforeInitialising(false)).toEqual({ kind: 'initialise' });
    expect(await rule.beforeInitialising(true)).toEqual({ kind: 'initialise' });
    expect(asked).toEqual(['first', 'again']);
  });

  it('says it cannot tell yet (retriable KAFKA_INSTANCES_UNKNOWN) when the instances group cannot be read', async () => {
    const rule = new InitRule({
      connectorName: 'conn',
      distributed: false,
      instances: { newest: () => Promise.reject(new Error('coordinator loading')) },
      fencing,
    });
    const error = await rejectionOf(rule.beforeInitialising(false));
    expect(error).toBeInstanceOf(RetriableError);
    expect((error as RetriableError).code).toBe('KAFKA_INSTANCES_UNKNOWN');
  });

  it('never asks the instances group in distributed mode', async () => {
    const rule = new InitRule({
      connectorName: 'conn',
      distributed: true,
      instances: { newest: () => Promise.reject(new Error('asked')) },
      fencing,
    });
    expect(await rule.beforeInitialising(true)).toEqual({ kind: 'taken-over' });
  });

  it('allows a rebuild after a fencing within the budget, and stands down past it', () => {
    const rule = new InitRule({ connectorName: 'conn', distributed: false, fencing });
    expect(rule.afterFencing(0)).toEqual({ kind: 'initialise' });
    expect(rule.afterFencing(1)).toEqual({
      kind: 'stand-down',
      why: 'fenced too often within kafka.fencedWindowMs',
    });
  });
});

describe('FencingBudget', () => {
  it('allows `limit` fencings within the window and refuses the next', () => {
    const budget = new FencingBudget({ limit: 2, windowMs: 1000 });
    expect(budget.allowRebuild(0)).toBe(true);
    expect(budget.allowRebuild(10)).toBe(true);
    expect(budget.allowRebuild(20)).toBe(false);
  });

  it('forgets fencings older than the window', () => {
    const budget = new FencingBudget({ limit: 1, windowMs: 1000 });
    expect(budget.allowRebuild(0)).toBe(true);
    expect(budget.allowRebuild(1000)).toBe(true);
    // Only the fencing at 1000 is in the window: a second one within it is over the limit.
    expect(budget.allowRebuild(1500)).toBe(false);
  });

  it('with a limit of 0 makes the first fencing fatal', () => {
    expect(new FencingBudget({ limit: 0, windowMs: 1000 }).allowRebuild(0)).toBe(false);
  });

  it('rejects invalid options at construction', () => {
    expect(() => new FencingBudget({ limit: -1, windowMs: 1000 })).toThrow(RangeError);
    expect(() => new FencingBudget({ limit: 1, windowMs: 0 })).toThrow(RangeError);
  });
});

describe('the init rule in the sink (scripted producer)', () => {
  it('stands by at its start, initialising nothing, when an instance started after this one runs (a start paused before its first initialisation)', async () => {
    // Issue 20, found by the chaos suite: a start frozen before its producer's first initialisation woke after
    // its replacement had taken over, and that first initialisation fenced the replacement.
    const kafka = new ScriptedKafka();
    const fatal: FatalError[] = [];
    const { sink } = sinkWith(kafka, { onFatal: (e) => fatal.push(e), newest: async () => false });

    const error = await rejectionOf(sink.start());
    expect(error).toBeInstanceOf(FatalError);
    expect((error as FatalError).code).toBe('KAFKA_FENCED_BY_ANOTHER_INSTANCE');
    expect(fatal).toEqual([error]);
    expect(kafka.producersBuilt).toBe(0);
    expect(await outcome(sink.commitPage(page('a', '1')))).toBe(error);
    await sink.close();
  });

  it('asks the instances group before its first initialisation and before each one after a failure, saying which', async () => {
    const kafka = new ScriptedKafka();
    const asked: string[] = [];
    const { sink } = sinkWith(kafka, {
      newest: async (initialisation) => (asked.push(initialisation), true),
    });
    await sink.start();
    kafka.script.beforeSend = async () => {
      kafka.script.beforeSend = async () => undefined;
      throw protocolError('REQUEST_TIMED_OUT');
    };
    await outcome(sink.commitPage(page('a', '1')));
    await sink.close();
    expect(asked).toEqual(['first', 'again']);
    expect(kafka.producersBuilt).toBe(2);
  });

  it('does not start while the instances group cannot be read (retriable: the start waits), and builds no producer', async () => {
    const kafka = new ScriptedKafka();
    const { sink } = sinkWith(kafka, {
      newest: () => Promise.reject(new Error('the group did not settle with this instance in it')),
    });

    const error = await rejectionOf(sink.start());
    expect(error).toBeInstanceOf(RetriableError);
    expect((error as RetriableError).code).toBe('KAFKA_INSTANCES_UNKNOWN');
    expect(kafka.producersBuilt).toBe(0);
    await sink.close();
  });

  it('stands down for good when fenced while a newer instance is in the instances group, building no producer that would fence it back', async () => {
    const kafka = new ScriptedKafka();
    const fatal: FatalError[] = [];
    const { sink } = sinkWith(kafka, { onFatal: (e) => fatal.push(e), newest: newerInstanceAfterStart() });
    await sink.start();
    const generation = sink.generation();
    kafka.script.beforeSend = async () => {
      throw protocolError('INVALID_PRODUCER_EPOCH');
    };

    const error = (await outcome(sink.commitPage(page('a', '1')))) as ConnectorError;
    expect(error).toBeInstanceOf(FatalError);
    expect(error.code).toBe('KAFKA_FENCED_BY_ANOTHER_INSTANCE');
    expect(fatal).toEqual([error]);
    kafka.script.beforeSend = async () => undefined;
    expect(await outcome(sink.commitPage(page('b', '1')))).toBe(error);
    await sink.close();
    expect(kafka.producersBuilt).toBe(1);
    expect(sink.generation()).toBe(generation);
  });

  it('stands down when a paused instance finds its old transaction fenced while a newer instance runs, whatever the transaction age', async () => {
    // Issue 20: paused past transactionTimeoutMs, the age rule took the fencing for its own timeout and
    // rebuilt, fencing the replacement back.
    const kafka = new ScriptedKafka();
    let now = 1_000_000;
    const { sink } = sinkWith(kafka, { clock: clockReading(() => now), newest: newerInstanceAfterStart() });
    await sink.start();
    kafka.script.beforeSend = async () => {
      now += 75_000; // SIGSTOP for 75 s, longer than transactionTimeoutMs (60 s)
      throw protocolError('INVALID_PRODUCER_EPOCH');
    };
    const error = (await outcome(sink.commitPage(page('a', '1')))) as ConnectorError;
    expect(error.code).toBe('KAFKA_FENCED_BY_ANOTHER_INSTANCE');
    expect(kafka.producersBuilt).toBe(1);
  });

  it('does not re-initialise after a failure that is not a fencing while a newer instance runs: it stands down', async () => {
    const kafka = new ScriptedKafka();
    const { sink } = sinkWith(kafka, { newest: newerInstanceAfterStart() });
    await sink.start();
    kafka.script.beforeSend = async () => {
      throw protocolError('REQUEST_TIMED_OUT');
    };
    const error = (await outcome(sink.commitPage(page('a', '1')))) as ConnectorError;
    expect(error.code).toBe('KAFKA_FENCED_BY_ANOTHER_INSTANCE');
    expect(kafka.producersBuilt).toBe(1);
  });

  it('does not re-initialise to settle a failed commit while a newer instance runs', async () => {
    const kafka = new ScriptedKafka();
    const { sink } = sinkWith(kafka, { newest: newerInstanceAfterStart() });
    await sink.start();
    kafka.script.commit = async () => {
      throw protocolError('NOT_COORDINATOR');
    };
    const error = (await outcome(sink.commitPage(page('a', '1')))) as ConnectorError;
    expect(error.code).toBe('KAFKA_FENCED_BY_ANOTHER_INSTANCE');
    expect(kafka.producersBuilt).toBe(1);
  });

  it('builds no producer while the instances group cannot be read, and rebuilds once it shows no newer instance', async () => {
    const kafka = new ScriptedKafka();
    let answer: () => Promise<boolean> = async () => true;
    const { sink } = sinkWith(kafka, { newest: () => answer() });
    await sink.start();
    answer = () => Promise.reject(new Error('coordinator loading'));
    kafka.script.beforeSend = async () => {
      throw protocolError('REQUEST_TIMED_OUT');
    };
    const first = (await outcome(sink.commitPage(page('a', '1')))) as ConnectorError;
    expect(first.disposition).toBe('retriable');
    expect(kafka.producersBuilt).toBe(1);
    kafka.script.beforeSend = async () => undefined;
    answer = async () => true;
    expect(await outcome(sink.commitPage(page('a', '1')))).toBe('resolved');
    expect(kafka.producersBuilt).toBe(2);
  });

  it('rebuilds the producer after a fencing when the instances group shows no newer instance, and counts a new generation', async () => {
    const kafka = new ScriptedKafka();
    let now = 1_000_000;
    const { sink } = sinkWith(kafka, { clock: clockReading(() => now) });
    await sink.start();
    const generation = sink.generation();
    kafka.script.beforeSend = async () => {
      now += 60_000; // transactionTimeoutMs: the coordinator aborted the transaction for its age
      throw protocolError('INVALID_PRODUCER_EPOCH');
    };

    const error = (await outcome(sink.commitPage(page('a', '1')))) as ConnectorError;
    expect(error.code).toBe('KAFKA_PRODUCER_FENCED');
    expect(error.disposition).toBe('retriable');
    expect(kafka.producersBuilt).toBe(2);
    expect(sink.generation()).toBe(generation + 1);
    kafka.script.beforeSend = async () => undefined;
    expect(await outcome(sink.commitPage(page('a', '1')))).toBe('resolved');
  });

  it('distributed mode: any loss of the producer, not only a fencing, hands the partition back without re-initialising', async () => {
    for (const failure of ['send', 'commit'] as const) {
      const kafka = new ScriptedKafka();
      let takenOver = 0;
      const { sink } = sinkWith(kafka, { onTakenOver: () => (takenOver += 1) });
      await sink.start();
      if (failure === 'send')
        kafka.script.beforeSend = async () => {
          throw protocolError('REQUEST_TIMED_OUT');
        };
      else
        kafka.script.commit = async () => {
          throw protocolError('NOT_COORDINATOR');
        };
      // A rejection, not a 'rejected' outcome: this sink commits nothing more, so the location does not
      // retry the page here; the partition's next owner writes it.
      const error = (await rejectionOf(sink.commitPage(page('a', '1')))) as ConnectorError;
      expect(error.code).toBe('KAFKA_PARTITION_TAKEN_OVER');
      expect(error.disposition).toBe('retriable');
      expect(takenOver).toBe(1);
      expect(kafka.producersBuilt).toBe(1);
      await sink.close();
      expect(kafka.producersBuilt).toBe(1);
    }
  });
});

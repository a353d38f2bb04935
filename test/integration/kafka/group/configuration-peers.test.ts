/**
 * The configurations group on the real broker: members that carry their fingerprints in their metadata learn each
 * other's after every rebalance, a member replaced with a new fingerprint (a reload) is seen by the others within
 * one rebalance, one that leaves is gone from their view, and a member sends no fetch request while it heartbeats.
 */
import type { Consumer, ConsumerConfig } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigurationPeers } from '../../../../src/kafka/group/configuration-peers.js';
import type { ConfigurationView } from '../../../../src/kafka/group/configuration-view.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { systemClock } from '../../../../src/time/clock.js';
import { createTopics, eventually, testKafka } from '../../../support/kafka.js';
import { uniqueName } from '../../../support/stack.js';

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/** `[fingerprint, instances]` of a view, in its order. */
const shape = (view: ConfigurationView) => view.peers.map((p) => [p.fingerprint, p.instances.join(',')]);

describe('ConfigurationPeers on the broker', () => {
  it('tells each member the fingerprints of the others, a reload within one rebalance and a leave alike, fetching nothing', async () => {
    const kafka = testKafka();
    const topic = uniqueName('offsets');
    await createTopics(kafka, [{ topic, numPartitions: 3 }]);
    const connectorName = uniqueName('connector');
    const consumers: Consumer[] = [];
    const consumerOf = kafka.consumer.bind(kafka);
    kafka.consumer = (config: ConsumerConfig) => {
      const consumer = consumerOf(config);
      consumers.push(consumer);
      return consumer;
    };
    const member = (instance: string) => {
      const peers = new ConfigurationPeers(kafka, {
        connectorName,
        topic,
        fingerprint: 'f1',
        instance,
        onView: () => undefined,
        clock: systemClock,
        logger: silentLogger(),
      });
      peers.start();
      closing.push(() => peers.close());
      return peers;
    };
    const a = member('a');
    const watched = consumers[0]!;
    let fetches = 0;
    let heartbeats = 0;
    watched.on(watched.events.REQUEST, ({ payload }) => {
      if (payload.apiName === 'Fetch') fetches += 1;
    });
    watched.on(watched.events.HEARTBEAT, () => {
      heartbeats += 1;
    });
    const b = member('b');

    await eventually(
      () => [a, b].every((p) => JSON.stringify(shape(p.current)) === JSON.stringify([['f1', 'a,b']])),
      60_000,
      'both see both on f1',
    );
    expect([a.current.state, b.current.state]).toEqual(['agreed', 'agreed']);

    await b.setFingerprint('f2');
    await eventually(
      () => [a, b].every((p) => p.current.state === 'differs'),
      60_000,
      'both see that they differ',
    );
    expect(shape(a.current)).toEqual([
      ['f1', 'a'],
      ['f2', 'b'],
    ]);
    expect(b.current.fingerprint).toBe('f2');

    await b.close();
    await eventually(
      () =>
        JSON.stringify(shape(a.current)) === JSON.stringify([['f1', 'a']]) && a.current.state === 'agreed',
      60_000,
      'a sees b gone',
    );
    // The member was alive throughout (heartbeats), and read nothing of the topic it subscribed to.
    await eventually(() => heartbeats >= 3, 30_000, 'three heartbeats');
    expect(fetches).toBe(0);
  });
});

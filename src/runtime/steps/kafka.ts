/**
 * Start-up step 2, Kafka: topics, schemas and the offset store (kafka/session.ts), waited for while the cluster
 * is down (KAFKA_UNAVAILABLE is retriable, like the registry), and one admin client for the readiness check and
 * the partition metadata.
 *
 * Single mode: the session also initialises the producer (fencing any older instance) and reads the offsets;
 * membership in `<name>-instances` is taken before the producer's first initialisation (`beforeProducer`), so an
 * older instance that wakes up sees this one and stands by rather than fence it back (kafka/instance-presence.ts).
 * Distributed mode: no producer and no offsets yet (kafka/group/distributed-session.ts); the ownership step
 * takes partitions over as the group assigns them.
 */
import type { Admin, Kafka } from 'kafkajs';
import { DistributedKafkaSession } from '../../kafka/group/distributed-session.js';
import { InstancePresence, PRESENCE_SESSION_TIMEOUT_MS } from '../../kafka/instance-presence.js';
import { KafkaSession, type KafkaSessionOptions } from '../../kafka/session.js';
import { waitUntilAvailable } from '../wait-until-available.js';
import type { StartContext } from './context.js';

/**
 * How long a single-mode start waits to become a member of the instances group before it initialises its
 * producer: a predecessor's member that was killed or paused has to expire first (its session timeout).
 */
export const PRESENCE_JOIN_WAIT_MS = PRESENCE_SESSION_TIMEOUT_MS + 10_000;

export type KafkaStep =
  | { mode: 'single'; session: KafkaSession; presence: InstancePresence; admin: Admin; kafka: Kafka }
  | { mode: 'distributed'; session: DistributedKafkaSession; admin: Admin; kafka: Kafka };

export async function openKafka(ctx: StartContext): Promise<KafkaStep> {
  const { config, logger, metrics, clock, lifecycle, failures } = ctx;
  const sessionOptions: KafkaSessionOptions = {
    config,
    boundaryCap: config.poll.boundaryCap,
    logger,
    metrics,
    clock,
    onFatal: (error) => failures.fail(error),
  };
  const wait = { logger, clock, ...(ctx.signal && { signal: ctx.signal }), what: 'the Kafka cluster' };
  let step: KafkaStep;
  if (config.connector.mode === 'distributed') {
    const session = await waitUntilAvailable(() => DistributedKafkaSession.start(sessionOptions), wait);
    // Opens no sink before the ownership step, which closes them before the group is left.
    step = { mode: 'distributed', session, admin: session.kafka.admin(), kafka: session.kafka };
  } else {
    const held: { presence?: InstancePresence } = {};
    const session = await waitUntilAvailable(
      () =>
        KafkaSession.start({
          ...sessionOptions,
          beforeProducer: async (kafka) => {
            if (held.presence === undefined) {
              const joined = await InstancePresence.join(
                kafka,
                config.connector.name,
                config.kafka.offsetsTopic,
                (error) => failures.membershipLost(error),
                clock,
              );
              held.presence = joined;
              // Left after the sink closed: the last page is committed before `offsets reset` may go ahead.
              lifecycle.defer('instance presence', () => joined.leave());
            }
            if (!(await held.presence.joined(PRESENCE_JOIN_WAIT_MS)))
              logger.warn(
                { waitedMs: PRESENCE_JOIN_WAIT_MS },
                'not yet a member of the instances group: initialising the producer anyway (an older instance that wakes up now may not see this one)',
              );
          },
          instances: {
            alone: () =>
              held.presence === undefined
                ? Promise.reject(new Error('not a member of the instances group'))
                : held.presence.alone(),
          },
        }),
      wait,
    );
    const { presence } = held;
    if (presence === undefined) throw new Error('single mode starts its session through beforeProducer');
    // Bounded: a commit the scheduler abandoned at its shutdown timeout may still hang on Kafka.
    lifecycle.defer('kafka session', () => session.close(config.poll.shutdownTimeoutMs));
    step = { mode: 'single', session, presence, admin: session.kafka.admin(), kafka: session.kafka };
  }
  const { admin } = step;
  await admin.connect();
  lifecycle.defer('kafka admin', () => admin.disconnect());
  return step;
}

/**
 * How the instances of one connector learn which configurations the others run: each is a member of a consumer
 * group of its own, `<connector.name>-configurations`, whose protocol metadata carries the fingerprint of the
 * sources it runs and a name for it (configuration-view.ts). After every completed join it reads every member's
 * metadata from the group coordinator (DescribeGroups) and reports the view: fingerprints and the instances that
 * run them, and whether they agree. Kafka's own group protocol is the exchange; no coordinator of our own.
 *
 * Why a group of its own, not the instances group's metadata: kafkajs cannot ask for a rejoin, so a new
 * fingerprint needs a new member, and replacing the instances group's member would rebalance the ownership of
 * every partition (distributed mode) or the writer's standing (single mode) on each reload. Here a replaced member
 * costs a rebalance of a group that owns nothing.
 *
 * The member fetches nothing, commits nothing and owns nothing: it subscribes to the offsets topic (the connector's
 * own, always there) only because a kafkajs consumer must subscribe to something, its assignor assigns nothing,
 * and the topic is paused at every join as well. A reload that changes the fingerprint replaces the member
 * (`setFingerprint`: leave, then a new member with the new metadata): the group rebalances, every member joins
 * again and describes again, so every instance's view is current within one rebalance of any reload, start or
 * stop (a killed instance's member leaves after CONFIGURATION_SESSION_TIMEOUT_MS).
 *
 * Reporting, never ownership: a failure here never stops the connector. A consumer that fails to start, crashes
 * for good or whose group cannot be described is logged, the view is unknown meanwhile, and a new member is
 * started after a backoff (time/restart-loop.ts).
 *
 * Contract: `start()` once (it never rejects, nor waits for the group); `setFingerprint` after each reload that was
 * applied, in order; `close()` at shutdown. `onView` is called with every new view, unknown ones included, never
 * concurrently with itself.
 */
import { hostname } from 'node:os';
import kafkajs, { type Admin, type Consumer, type Kafka, type PartitionAssigner } from 'kafkajs';
import type { Logger } from '../../logging/logger.js';
import type { Backoff } from '../../time/backoff.js';
import type { Clock } from '../../time/clock.js';
import { RestartLoop, type RestartEvents, type Restartable } from '../../time/restart-loop.js';
import { describeKafkaError, kafkaErrorTypes } from '../client/kafka-errors.js';
import {
  configurationView,
  encodePeerMetadata,
  unknownView,
  viewChange,
  type ConfigurationView,
} from './configuration-view.js';
import { pauseIfRunning } from './instance-presence.js';

// kafkajs is CommonJS and Node's ESM loader cannot see this export by name (only vitest's transform can).
const { AssignerProtocol } = kafkajs;

export const CONFIGURATION_ASSIGNER = 'CallsConnectorConfigurations';

/**
 * The group's session timeout: the broker's minimum by default, so a killed instance's fingerprint leaves the
 * others' views within about this long. Heartbeats every third of it.
 */
export const CONFIGURATION_SESSION_TIMEOUT_MS = 6_000;
const HEARTBEAT_INTERVAL_MS = 2_000;
/** How long a rebalance waits for every member to join again (each notices within a heartbeat). */
const REBALANCE_TIMEOUT_MS = 20_000;
/** The fetch loop only sleeps this long between heartbeats (it fetches nothing); a leave waits for it. */
const MAX_WAIT_MS = 500;
/** After a join, the group is described until it is stable with this member in it, this often and this many times. */
const DESCRIBE_INTERVAL_MS = 500;
const DESCRIBE_ATTEMPTS = 20;

const RESTART_BACKOFF: Backoff = { initialDelayMs: 1_000, maxDelayMs: 60_000, multiplier: 2, jitter: 0.5 };

export function configurationsGroupId(connectorName: string): string {
  return `${connectorName}-configurations`;
}

/** This instance's name in the group: host, process id and start time (nothing secret). */
export function peerInstanceName(startedAt: number): string {
  return `${hostname()}:${process.pid}@${new Date(startedAt).toISOString()}`;
}

/**
 * The group's assignor: its metadata carries `userData` (the peer metadata), and it assigns nothing, so the
 * member fetches nothing whatever it subscribed to.
 */
export function configurationAssigner(userData: () => Buffer): PartitionAssigner {
  return () => ({
    name: CONFIGURATION_ASSIGNER,
    version: 0,
    assign: ({ members }) =>
      Promise.resolve(
        members.map(({ memberId }) => ({
          memberId,
          memberAssignment: AssignerProtocol.MemberAssignment.encode({
            version: 0,
            assignment: {},
            userData: Buffer.alloc(0),
          }),
        })),
      ),
    protocol: ({ topics }) => ({
      name: CONFIGURATION_ASSIGNER,
      metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: userData() }),
    }),
  });
}

export interface ConfigurationPeersOptions {
  connectorName: string;
  /** The topic the member subscribes to without reading it: the offsets topic. */
  topic: string;
  /** The fingerprint of the sources running at start. */
  fingerprint: string;
  /** This instance's name in the views (peerInstanceName). */
  instance: string;
  onView: (view: ConfigurationView) => void;
  clock: Clock;
  logger: Logger;
  restartBackoff?: Backoff;
}

export class ConfigurationPeers {
  private fingerprint: string;
  private view: ConfigurationView;
  /** The last view that was not unknown: what the log's changes are told against. */
  private lastKnown: ConfigurationView | null = null;
  private loop: RestartLoop;
  /** Member replacements, one at a time, in order. */
  private replacing: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly kafka: Pick<Kafka, 'consumer' | 'admin'>,
    private readonly options: ConfigurationPeersOptions,
  ) {
    this.fingerprint = options.fingerprint;
    this.view = unknownView(options.fingerprint);
    this.loop = this.newLoop();
  }

  /** Starts the first member in the background; never rejects (a failure is retried, see the module comment). */
  start(): void {
    this.publish(unknownView(this.fingerprint));
    void this.loop.start();
  }

  /** The latest view (unknown before the first join was described, and while the member fails). */
  get current(): ConfigurationView {
    return this.view;
  }

  /**
   * The sources running now have `fingerprint` (a reload was applied): when it is another, the member is replaced
   * by one whose metadata carries it. Resolves once the new member's start settled; never rejects.
   */
  setFingerprint(fingerprint: string): Promise<void> {
    this.replacing = this.replacing.then(async () => {
      if (this.closed || fingerprint === this.fingerprint) return;
      this.fingerprint = fingerprint;
      const old = this.loop;
      this.loop = this.newLoop();
      this.publish(unknownView(fingerprint));
      await old.close();
      if (!this.closed) await this.loop.start();
    });
    return this.replacing;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.replacing;
    await this.loop.close();
  }

  private newLoop(): RestartLoop {
    const { logger, clock, connectorName } = this.options;
    const groupId = configurationsGroupId(connectorName);
    const loop: RestartLoop = new RestartLoop({
      create: (events) => this.attempt(events, () => this.loop === loop),
      describe: describeKafkaError,
      onFailure: ({ error, reason, retryInMs }) => {
        if (this.loop === loop) this.publish(unknownView(this.fingerprint));
        logger.warn(
          { groupId, reason, types: kafkaErrorTypes(error), retryInMs },
          'configurations group: this instance cannot tell which configurations the other instances run (unknown in /status) until a new member joins; the connector runs on',
        );
      },
      onRecovered: () => logger.info({ groupId }, 'configurations group: a member joined again'),
      backoff: this.options.restartBackoff ?? RESTART_BACKOFF,
      clock,
    });
    return loop;
  }

  /** One member: a consumer of the group with the current fingerprint, and an admin to describe the group. */
  private attempt(events: RestartEvents, current: () => boolean): Restartable {
    const { connectorName, topic, instance } = this.options;
    const groupId = configurationsGroupId(connectorName);
    const userData = encodePeerMetadata({ fingerprint: this.fingerprint, instance });
    const fingerprint = this.fingerprint;
    let stopped = false;
    /** Completed joins of this member: a describe started for an earlier join gives way to a later one. */
    let joins = 0;
    const consumer: Consumer = this.kafka.consumer({
      groupId,
      sessionTimeout: CONFIGURATION_SESSION_TIMEOUT_MS,
      heartbeatInterval: HEARTBEAT_INTERVAL_MS,
      rebalanceTimeout: REBALANCE_TIMEOUT_MS,
      maxWaitTimeInMs: MAX_WAIT_MS,
      allowAutoTopicCreation: false,
      partitionAssigners: [configurationAssigner(() => userData)],
      retry: { restartOnFailure: () => Promise.resolve(!stopped) },
    });
    const admin: Admin = this.kafka.admin();
    const describe = async (memberId: string, join: number): Promise<void> => {
      for (let attempt = 1; ; attempt++) {
        const { groups } = await admin.describeGroups([groupId]);
        if (stopped || join !== joins || !current()) return;
        const group = groups[0];
        // Only a stable group shows its members' metadata; this member in it means the view includes this join.
        if (group?.state === 'Stable' && group.members.some((m) => m.memberId === memberId)) {
          this.publish(configurationView(fingerprint, group.members));
          return;
        }
        if (attempt >= DESCRIBE_ATTEMPTS) {
          // Still rebalancing: this member joins again (and describes again) once the rebalance reaches it.
          this.options.logger.info(
            { groupId, state: group?.state ?? 'unknown', descriptions: attempt },
            'configurations group: not stable with this instance in it yet; the view is unknown until the next join',
          );
          this.publish(unknownView(fingerprint));
          return;
        }
        await this.options.clock.sleep(DESCRIBE_INTERVAL_MS);
        if (stopped || join !== joins || !current()) return;
      }
    };
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      if (stopped) return;
      pauseIfRunning(consumer, topic);
      events.running();
      joins += 1;
      describe(payload.memberId, joins).catch((error: unknown) => {
        if (!stopped) events.failed(error);
      });
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (stopped || payload.restart) return; // kafkajs joins again by itself
      events.failed(payload.error);
    });
    return {
      start: async () => {
        await admin.connect();
        await consumer.connect();
        await consumer.subscribe({ topic, fromBeginning: false });
        // Stopped while connecting: the disconnect may have come before the connection.
        if (stopped) return consumer.disconnect();
        await consumer.run({ autoCommit: false, eachBatch: async () => {} });
      },
      stop: async () => {
        stopped = true;
        await Promise.all([
          consumer.disconnect().catch(() => undefined),
          admin.disconnect().catch(() => undefined),
        ]);
      },
    };
  }

  private publish(view: ConfigurationView): void {
    const change = viewChange(this.lastKnown, view);
    this.view = view;
    if (view.state !== 'unknown') this.lastKnown = view;
    this.options.onView(view);
    if (change === null) return;
    const fields = {
      groupId: configurationsGroupId(this.options.connectorName),
      fingerprint: view.fingerprint,
      peers: view.peers,
    };
    if (change.level === 'warn') this.options.logger.warn(fields, change.message);
    else this.options.logger.info(fields, change.message);
  }
}

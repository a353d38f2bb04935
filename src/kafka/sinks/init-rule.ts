/**
 * Who may initialise the exactly-once sink's transactional id (Kafka Connect's `preProducerCheck`). Every producer
 * initialisation runs InitProducerId, which fences whoever holds the id. A sink that was paused or cut off (while
 * writing, or during its start, before its first initialisation) cannot know whether a newer writer took the id
 * meanwhile, and the transaction's age cannot tell it either (a pause outlasts any timeout). So every
 * initialisation passes this rule first (`rebuild`: one after the first made a producer ready):
 * - single mode: `instances.newest()` must show, from Kafka's own membership of `<name>-instances`, that no
 *   instance started after this one is running (every instance is a member, its start stamp in its metadata:
 *   kafka/group/start-stamp.ts). If one is, the sink stands down for good (KAFKA_FENCED_BY_ANOTHER_INSTANCE). The
 *   newest instance wins and is never fenced back; an older one that stands by does not stop the newest from
 *   initialising again after a failure of its own. When the membership cannot be read, nothing is built now
 *   (retriable KAFKA_INSTANCES_UNKNOWN: the start waits, a running sink asks again at its next transaction).
 *   Without `instances`, the first initialisation goes ahead and any later one stands down;
 * - distributed mode: the first initialisation only (the group gave this instance the partition). Any later one
 *   means the partition is handed back ('taken-over'): it is taken again only through the group.
 * After a fencing, a FencingBudget bounds the rebuilds besides, so a misjudged fencing cannot make two instances
 * take turns for long.
 */
import { RetriableError } from '../../errors/index.js';
import type { Initialisation } from '../group/start-stamp.js';
import { describeKafkaError } from '../client/kafka-errors.js';

/** Kafka's word on which instances of a connector run (kafka/group/instance-presence.ts implements it). */
export interface InstanceCheck {
  /**
   * Resolves true when Kafka's group membership shows that no instance of this connector started after this one
   * is running, false when one is; rejects when it cannot tell now (Kafka unavailable, the group rebalancing too
   * long).
   */
  newest(initialisation: Initialisation): Promise<boolean>;
}

/** What the rule says of an initialisation: go ahead, hand the partition back, or stand down for good (`why`). */
export type InitVerdict =
  { kind: 'initialise' } | { kind: 'taken-over' } | { kind: 'stand-down'; why: string };

/** The modes whose rule needs no question to Kafka: distributed, and single without an instances group. */
export type UnaskedMode = 'distributed' | 'single-without-instances';

const INITIALISE: InitVerdict = { kind: 'initialise' };

/**
 * The first-build rule: the first initialisation goes ahead; a later one hands the partition back (distributed)
 * or stands down (single mode with no instances group to ask). Single mode with the group asks it instead.
 */
export function initialisationWithoutAsking(mode: UnaskedMode, rebuild: boolean): InitVerdict {
  if (!rebuild) return INITIALISE;
  return mode === 'distributed'
    ? { kind: 'taken-over' }
    : { kind: 'stand-down', why: 'no instances group to ask' };
}

/** The verdict on the instances group's answer (`newest`: no instance started after this one runs). */
export function initialisationAfterAsking(newest: boolean): InitVerdict {
  return newest
    ? INITIALISE
    : { kind: 'stand-down', why: 'an instance started after this one is a member of the instances group' };
}

export interface InitRuleOptions {
  connectorName: string;
  /** Distributed mode: the partition is this instance's until its producer is lost. */
  distributed: boolean;
  /** Single mode: Kafka's word on other running instances. */
  instances?: InstanceCheck | undefined;
  fencing: FencingBudgetOptions;
}

/** The rule of the module comment, with what it asks Kafka and the fencings it has counted. */
export class InitRule {
  private readonly budget: FencingBudget;

  constructor(private readonly options: InitRuleOptions) {
    this.budget = new FencingBudget(options.fencing);
  }

  /** Before every initialisation; rejects with KAFKA_INSTANCES_UNKNOWN when it cannot tell yet. */
  async beforeInitialising(rebuild: boolean): Promise<InitVerdict> {
    const { distributed, instances } = this.options;
    if (distributed) return initialisationWithoutAsking('distributed', rebuild);
    if (instances === undefined) return initialisationWithoutAsking('single-without-instances', rebuild);
    try {
      return initialisationAfterAsking(await instances.newest(rebuild ? 'again' : 'first'));
    } catch (error) {
      throw new RetriableError(
        'KAFKA_INSTANCES_UNKNOWN',
        `cannot tell whether a newer instance of connector.name "${this.options.connectorName}" runs, so the producer is not initialised yet: ${describeKafkaError(error)}`,
        { cause: error },
      );
    }
  }

  /** A fencing at `now` (epoch ms): whether the budget still lets the producer be built again. */
  afterFencing(now: number): InitVerdict {
    return this.budget.allowRebuild(now)
      ? INITIALISE
      : { kind: 'stand-down', why: 'fenced too often within kafka.fencedWindowMs' };
  }
}

/**
 * How many times a transactional producer that was fenced may be rebuilt before the process gives up.
 *
 * INVALID_PRODUCER_EPOCH has two causes: another instance with the same connector name (hence the same
 * transactionalId) initialised its producer, or the coordinator aborted our transaction after
 * `kafka.transactionTimeoutMs`. The sink tells them apart by Kafka's group membership, never by the age of its
 * transaction (a paused instance's transaction is as old as the pause): it rebuilds only when the group
 * `<name>-instances` shows no other instance (the rule above). This budget bounds those rebuilds: they are
 * allowed while fewer than `limit` fencings happened within `windowMs`; the next one is fatal.
 */
export interface FencingBudgetOptions {
  /** Fencings tolerated within the window; the next is fatal. */
  limit: number;
  windowMs: number;
}

export class FencingBudget {
  private readonly times: number[] = [];

  constructor(private readonly options: FencingBudgetOptions) {
    if (!Number.isInteger(options.limit) || options.limit < 0)
      throw new RangeError('limit must be a non-negative integer');
    if (!(options.windowMs > 0)) throw new RangeError('windowMs must be positive');
  }

  /** Records a fencing at `now` (epoch ms); returns true while a rebuild is still allowed. */
  allowRebuild(now: number): boolean {
    while (this.times.length > 0 && (this.times[0] ?? 0) <= now - this.options.windowMs) this.times.shift();
    this.times.push(now);
    return this.times.length <= this.options.limit;
  }
}

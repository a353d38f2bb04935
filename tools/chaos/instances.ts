/**
 * The connector processes of a chaos run, as a supervisor sees them: a fixed number of instance slots (one in
 * single mode, `--instances N` in distributed mode), each running one process of the built CLI at a time
 * (two for a moment during a rolling restart or a SIGSTOP replacement in single mode). An unexpected exit
 * of a slot's current process is restarted, as systemd's Restart=always or a Deployment does; exits the
 * driver caused (kill -9, SIGTERM) are expected ("retiring").
 *
 * Also what the driver reads from outside, through each process's metrics port only: `/readyz`, and in
 * distributed mode `/status` (the locations it owns and its group assignment), and the ownership rule the
 * run holds the instances to. Nothing here imports the connector (tools/chaos is independent of src/).
 */
import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { cliPath, LoggedProcess, type Exit } from './processes.js';

/** What `/status` says in distributed mode (the fields the driver reads). */
export interface InstanceStatus {
  connector: { state: string };
  assignment: { partitions: number[]; generationId: number | null };
  tasks: { id: string; state: string }[];
}

/** Per-slot facts for the report. */
export interface SlotFacts {
  slot: string;
  /** Names of the processes the slot ran, in order. */
  processes: string[];
  kills: number;
  sigstops: number;
  unexpectedExits: number;
  peakRssBytes: number;
  /** At the end (distributed mode): the partitions and the number of locations it owned; its last exit. */
  finalPartitions: number[];
  finalLocations: number;
  finalExit: string;
}

export interface FleetOptions {
  /** Number of slots (1 in single mode). */
  size: number;
  /** The first metrics port and how many the pool holds (each running process holds one). */
  portBase: number;
  portCount: number;
  /** Writes the config of process number `n` with its metrics port; returns the file. */
  configFile: (n: number, metricsPort: number) => string;
  logFile: (name: string) => string;
  env: () => NodeJS.ProcessEnv;
  /** True once the run tears down: nothing more is started, exits are not restarted. */
  stopping: () => boolean;
  /**
   * An exit the driver did not cause, of a slot's current process: recorded by the run, which answers the
   * delay before the slot is restarted.
   */
  onUnexpectedExit: (instance: LoggedProcess, slot: string, exit: Exit) => number;
}

export class Fleet {
  /** Every process started, in order. */
  readonly all: LoggedProcess[] = [];
  readonly facts: SlotFacts[];
  /** Processes the driver stopped or is replacing: their exit is expected. */
  private readonly retiring = new Set<LoggedProcess>();
  private readonly currents: (LoggedProcess | null)[];
  private readonly slotOf = new Map<LoggedProcess, number>();
  private readonly portOf = new Map<LoggedProcess, number>();

  constructor(private readonly options: FleetOptions) {
    this.currents = Array.from({ length: options.size }, () => null);
    this.facts = Array.from({ length: options.size }, (_, i) => ({
      slot: slotName(i),
      processes: [],
      kills: 0,
      sigstops: 0,
      unexpectedExits: 0,
      peakRssBytes: 0,
      finalPartitions: [],
      finalLocations: 0,
      finalExit: '',
    }));
  }

  get size(): number {
    return this.options.size;
  }

  /** Starts a new process for the slot; it becomes the slot's current process. */
  start(slot: number): LoggedProcess {
    // A fault or the supervisor may still be at work while Ctrl-C tears the run down: start nothing then.
    if (this.options.stopping()) throw new Error('the run is stopping');
    const n = this.all.length + 1;
    const name = `connector-${n}`;
    const port = this.freePort();
    const instance = new LoggedProcess(
      name,
      [cliPath, 'run', '--config', this.options.configFile(n, port)],
      this.options.logFile(name),
      this.options.env(),
    );
    this.all.push(instance);
    this.currents[slot] = instance;
    this.slotOf.set(instance, slot);
    this.portOf.set(instance, port);
    this.fact(instance).processes.push(name);
    void instance.exited.then((exit) => this.onExit(instance, exit));
    return instance;
  }

  current(slot: number): LoggedProcess | null {
    return this.currents[slot] ?? null;
  }

  /** The slot's current process, started first when none runs. */
  running(slot: number): LoggedProcess {
    const current = this.current(slot);
    return current !== null && current.running ? current : this.start(slot);
  }

  /** "i2 (connector-7)": the slot and the process, for messages. */
  label(instance: LoggedProcess): string {
    return `${this.fact(instance).slot} (${instance.name})`;
  }

  slotIndex(instance: LoggedProcess): number {
    return this.slotOf.get(instance) ?? 0;
  }

  fact(instance: LoggedProcess): SlotFacts {
    return this.facts[this.slotIndex(instance)] as SlotFacts;
  }

  /** The current processes of every slot that run now. */
  currentRunning(): LoggedProcess[] {
    return this.currents.filter((c): c is LoggedProcess => c !== null && c.running);
  }

  /** Its exit is expected from now on (the driver stops or replaces it). */
  retire(instance: LoggedProcess): void {
    this.retiring.add(instance);
  }

  /**
   * Makes `instance` its slot's current process again (a standby the driver woke and now relies on to take
   * over): its exit is unexpected from now on, and restarted.
   */
  reinstate(instance: LoggedProcess): void {
    this.retiring.delete(instance);
    this.currents[this.slotIndex(instance)] = instance;
  }

  async kill9(instance: LoggedProcess): Promise<void> {
    this.retire(instance);
    instance.signal('SIGCONT');
    instance.signal('SIGKILL');
    await instance.exited;
  }

  metricsPort(instance: LoggedProcess): number {
    return this.portOf.get(instance) ?? -1;
  }

  /** `/readyz` answers 200 within 2 s. */
  async ready(instance: LoggedProcess): Promise<boolean> {
    const response = await fetch(`http://127.0.0.1:${this.metricsPort(instance)}/readyz`, {
      signal: AbortSignal.timeout(2000),
    });
    await response.arrayBuffer();
    return response.ok;
  }

  /**
   * Single mode: `/status` names it the writer (it holds the transactional id). A standby is ready too, so
   * readiness cannot tell the two apart; false when it does not answer within 2 s.
   */
  async writing(instance: LoggedProcess): Promise<boolean> {
    const response = await fetch(`http://127.0.0.1:${this.metricsPort(instance)}/status`, {
      signal: AbortSignal.timeout(2000),
    });
    if (!response.ok) return false;
    const body = (await response.json()) as { instance?: { role?: string } };
    return body.instance?.role === 'writer';
  }

  /** Its `/status`; undefined when it does not answer within 2 s (stopped, starting, exited). */
  async status(instance: LoggedProcess): Promise<InstanceStatus | undefined> {
    if (!instance.running) return undefined;
    try {
      const response = await fetch(`http://127.0.0.1:${this.metricsPort(instance)}/status`, {
        signal: AbortSignal.timeout(2000),
      });
      if (!response.ok) return undefined;
      const body = (await response.json()) as Partial<InstanceStatus>;
      return {
        connector: body.connector ?? { state: 'UNKNOWN' },
        assignment: body.assignment ?? { partitions: [], generationId: null },
        tasks: body.tasks ?? [],
      };
    } catch {
      return undefined;
    }
  }

  /** The statuses of the given processes that answer, by process name. */
  async views(instances: readonly LoggedProcess[]): Promise<Map<string, InstanceStatus>> {
    const answers = await Promise.all(instances.map(async (i) => [i.name, await this.status(i)] as const));
    return new Map(answers.filter((a): a is [string, InstanceStatus] => a[1] !== undefined));
  }

  private freePort(): number {
    const held = new Set(this.all.filter((i) => i.running).map((i) => this.portOf.get(i)));
    for (let p = this.options.portBase; p < this.options.portBase + this.options.portCount; p++)
      if (!held.has(p)) return p;
    throw new Error(`no free metrics port among ${this.options.portCount}`);
  }

  private onExit(instance: LoggedProcess, exit: Exit): void {
    const fact = this.fact(instance);
    fact.peakRssBytes = Math.max(fact.peakRssBytes, instance.peakRssBytes);
    const slot = this.slotIndex(instance);
    if (this.retiring.has(instance) || this.currents[slot] !== instance || this.options.stopping()) return;
    fact.unexpectedExits++;
    const delay = this.options.onUnexpectedExit(instance, fact.slot, exit);
    setTimeout(() => {
      if (this.currents[slot] === instance && !this.options.stopping()) this.start(slot);
    }, delay);
  }
}

export function slotName(slot: number): string {
  return `i${slot + 1}`;
}

const partitioner = Partitioners.DefaultPartitioner();

/**
 * The partition of the offsets topic a location's offset record goes to: Kafka's default partitioner
 * (murmur2 of the key `<connector.name>/<locationUid>`), the same in kafkajs and the Java client.
 */
export function offsetsPartitionOf(key: string, partitions: number): number {
  const partitionMetadata = Array.from({ length: partitions }, (_, partitionId): PartitionMetadata => ({
    partitionErrorCode: 0,
    partitionId,
    leader: 0,
    replicas: [0],
    isr: [0],
    offlineReplicas: [],
  }));
  return partitioner({ topic: 'offsets', partitionMetadata, message: { key, value: null } });
}

/**
 * What is wrong with a view of the instances that should be settled. `partitionOf` maps every configured
 * location to its partition of the offsets topic; `expected` names the processes that must answer. Empty when
 * every expected instance answers with an assignment of one and the same generation, every partition holding
 * configured locations is assigned to exactly one of them, and every configured location is owned (listed in
 * `/status` tasks) by exactly one instance: the one its partition is assigned to.
 */
export function ownershipProblems(
  views: ReadonlyMap<string, InstanceStatus>,
  partitionOf: ReadonlyMap<string, number>,
  expected: readonly string[],
): string[] {
  const problems: string[] = [];
  for (const name of expected) {
    const status = views.get(name);
    if (status === undefined) problems.push(`${name} did not answer`);
    else if (status.assignment.generationId === null) problems.push(`${name} has no assignment`);
  }
  for (const name of views.keys())
    if (!expected.includes(name)) problems.push(`${name} answers but is not expected to run`);
  const generations = new Set(
    [...views.values()].flatMap((s) =>
      s.assignment.generationId === null ? [] : [s.assignment.generationId],
    ),
  );
  if (generations.size > 1) problems.push(`generations differ: ${[...generations].join(', ')}`);
  const holders = new Map<number, string[]>();
  for (const [name, status] of views)
    for (const p of status.assignment.partitions) holders.set(p, [...(holders.get(p) ?? []), name]);
  for (const p of [...new Set(partitionOf.values())].sort((a, b) => a - b)) {
    const of = holders.get(p) ?? [];
    if (of.length !== 1) problems.push(`partition ${p} held by ${of.length} (${of.join(', ')})`);
  }
  const owners = new Map<string, string[]>();
  for (const [name, status] of views)
    for (const task of status.tasks) owners.set(task.id, [...(owners.get(task.id) ?? []), name]);
  for (const [location, partition] of partitionOf) {
    const of = owners.get(location) ?? [];
    if (of.length !== 1) problems.push(`location ${location} owned by ${of.length} (${of.join(', ')})`);
    else if (!(views.get(of[0] as string)?.assignment.partitions.includes(partition) ?? false))
      problems.push(`location ${location} owned by ${of[0]}, which does not hold its partition ${partition}`);
  }
  for (const location of owners.keys())
    if (!partitionOf.has(location)) problems.push(`location ${location} is not configured`);
  return problems;
}
